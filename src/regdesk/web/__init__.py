"""Server-rendered pages: login, consent and the account page (issue 4).

`routes.router` holds the pages; `pages.static_files()` the stylesheet they load;
`headers.SecurityHeaders` the headers every answer carries.
"""
