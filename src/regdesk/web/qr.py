"""QR codes (a ticket's code, an authenticator app's secret) as SVG made here, on the server,
and inlined in the page: the pages run no script, and their Content-Security-Policy
(web/headers.py) loads images from this origin only, so neither a script nor a `data:` image
could draw them."""

from __future__ import annotations

import segno
from markupsafe import Markup

QR_ERROR_LEVEL = "m"  # 15% of the code may be smudged or creased and it still reads
QR_SCALE = 6  # pixels per module: 29 modules and the quiet zone make a code of about 200 px


def qr_svg(text: str, svg_class: str, *, scale: int = QR_SCALE) -> Markup:
    """`text` as an inline SVG QR code, dark on a white quiet zone (a scanner needs the
    contrast whatever the page around it looks like); `scale`: pixels (CSS, 1/96 in) per
    module, smaller on a printed badge."""
    qr = segno.make(text, error=QR_ERROR_LEVEL, micro=False)
    svg = qr.svg_inline(scale=scale, dark="#000000", light="#ffffff", svgclass=svg_class)
    return Markup(svg)  # noqa: S704 (segno's own markup: paths, no text)
