"""Server-rendered pages: login, consent and the account page (issue 4).

`routes.router` holds the pages; `pages.static_files()` the stylesheet they load;
`headers.HtmlSecurityHeaders` the headers every HTML response carries.
"""
