"""The registration desk (registrations.md, Pages; issue 17): checking people in once
(`check_in`), the desk's search (`search`) and pages (`pages`, gathered in `routes`), badges
printed one at a time or in batches (`badges`, `badge_pages`), the on-site sale (`sale`,
`sale_pages`), the organizers' statistics (`stats`, `stats_pages`), and the ticket API for
scanning apps (`tickets`). Ticket codes themselves are registrations/ticket_codes.py's."""
