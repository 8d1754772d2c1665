"""Screenshots small enough for the docs: a browser's PNG cut down to 256
colours (median cut, in the page's own canvas) and written again as an
indexed PNG with the standard library's zlib.

A full-colour screenshot of the table weighs several times more than the
same picture in 256 well-chosen colours, which a person cannot tell apart
on a page of the docs; no image library is needed for it.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

#: Median cut over a 6-bits-a-channel histogram of the picture; returns the
#: palette (r, g, b, ... up to 256 colours) and each pixel's index, base64.
QUANTIZE_JS = """async (data) => {
  const img = new Image();
  img.src = "data:image/png;base64," + data;
  await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = img.width;
  canvas.height = img.height;
  const g = canvas.getContext("2d");
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, img.width, img.height).data;
  const n = img.width * img.height;
  const key = new Uint32Array(n);
  const count = new Map();
  for (let i = 0; i < n; i++) {
    const k = ((px[4 * i] >> 2) << 12) | ((px[4 * i + 1] >> 2) << 6) | (px[4 * i + 2] >> 2);
    key[i] = k;
    count.set(k, (count.get(k) ?? 0) + 1);
  }
  const colours = [...count].map(([k, c]) => ({
    k, c, rgb: [(k >> 12) & 63, (k >> 6) & 63, k & 63],
  }));
  const range = (box, ch) => {
    let lo = 63, hi = 0;
    for (const x of box) { lo = Math.min(lo, x.rgb[ch]); hi = Math.max(hi, x.rgb[ch]); }
    return hi - lo;
  };
  const weight = (box) => box.reduce((s, x) => s + x.c, 0);
  let boxes = [colours];
  while (boxes.length < 256) {
    let best = -1, bestScore = 0, bestCh = 0;
    boxes.forEach((box, i) => {
      if (box.length < 2) return;
      const ranges = [0, 1, 2].map((ch) => range(box, ch));
      const ch = ranges.indexOf(Math.max(...ranges));
      const score = ranges[ch] * Math.sqrt(weight(box));
      if (score > bestScore) { best = i; bestScore = score; bestCh = ch; }
    });
    if (best < 0) break;
    const box = boxes[best].sort((x, y) => x.rgb[bestCh] - y.rgb[bestCh]);
    const half = weight(box) / 2;
    let cut = 1, seen = box[0].c;
    while (cut < box.length - 1 && seen + box[cut].c <= half) seen += box[cut++].c;
    boxes.splice(best, 1, box.slice(0, cut), box.slice(cut));
  }
  const palette = boxes.map((box) => {
    const w = weight(box);
    const mean = (ch) => box.reduce((s, x) => s + x.rgb[ch] * x.c, 0) / w;
    return [0, 1, 2].map((ch) => Math.round((mean(ch) * 255) / 63));
  });
  const index = new Map();
  for (const x of colours) {
    const [r, gr, b] = x.rgb.map((v) => (v * 255) / 63);
    let best = 0, bestD = Infinity;
    palette.forEach(([pr, pg, pb], j) => {
      const d = 2 * (r - pr) ** 2 + 4 * (gr - pg) ** 2 + 3 * (b - pb) ** 2;
      if (d < bestD) { bestD = d; best = j; }
    });
    index.set(x.k, best);
  }
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = index.get(key[i]);
  let text = "";
  for (let i = 0; i < n; i += 0x8000) text += String.fromCharCode(...out.subarray(i, i + 0x8000));
  return { width: img.width, height: img.height, palette: palette.flat(), index: btoa(text) };
}"""


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def indexed_png(width: int, height: int, palette: list[int], index: bytes) -> bytes:
    """An 8-bit indexed PNG (colour type 3), each row unfiltered."""
    rows = b"".join(b"\x00" + index[y * width : (y + 1) * width] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"PLTE", bytes(palette)),
            _chunk(b"IDAT", zlib.compress(rows, 9)),
            _chunk(b"IEND", b""),
        ]
    )


def small_png(page: Any, png: bytes) -> bytes:
    """``png`` (a screenshot) in 256 colours, quantized in ``page``'s canvas."""
    picture = page.evaluate(QUANTIZE_JS, base64.b64encode(png).decode())
    return indexed_png(
        int(picture["width"]),
        int(picture["height"]),
        [int(v) for v in picture["palette"]],
        base64.b64decode(picture["index"]),
    )
