"""The registration desk (registrations.md, Pages; issue 17): checking people in once
(`check_in`), the desk's search (`search`) and pages (`pages`), and the ticket API for scanning
apps (`tickets`). Ticket codes themselves are registrations/ticket_codes.py's."""
