"""Records kept rendered, ready to send: one declaration per resource (`Document`), from which
everything else is made.

A `Document` names its kind, the table of its records, the function that renders records
from their tables, and what it shows (`Stale`: the tables and columns whose changes make it
stale). From it come:
- its table, `<kind>_documents` (key and body), in the metadata like any model;
- its triggers (`documents.triggers`), which delete and queue the documents a change touches,
  in the same statement as the change, whoever makes it (the API, an import, SQL by hand);
- the refresh that renders what is queued before each write commits (`documents.refresh`,
  hooked into `db.write_session` at start by `install`);
- the one way every read takes the stored bodies (`Document.read`): the stored body, unless
  queued, then `documents.reading.complete` renders it from the tables; and a page's
  (`Document.page`), which SQLite joins into one string (`documents.reading.read_page`).

Derived data, never the source of truth: a change shows in the very next read, whoever made it.
A new resource needs one declaration, and a migration that calls `triggers.install` for it.
"""

from regdesk.documents.declarations import ALL, Document, Page, Stale
from regdesk.documents.refresh import install

__all__ = ["ALL", "Document", "Page", "Stale", "install"]
