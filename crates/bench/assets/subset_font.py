#!/usr/bin/env python3
"""Writes DejaVuSans-subset.ttf: DejaVu Sans cut down to the characters the
plots draw, so that the PNG plots can render text without system fonts and
the repository stays small (about 60 KB instead of 760 KB).

Usage: python3 subset_font.py [/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf]

Kept: .notdef, ASCII, Latin-1, Greek lower case and a little punctuation
(dashes, quotes, ellipsis, bullet, minus, arrows, comparison signs), with the
glyphs their composites use; glyphs are renumbered. Tables rewritten: cmap
(one format 4 subtable), glyf/loca (long offsets), hmtx/hhea, maxp
(glyph count), kern (pairs of kept glyphs), post (format 3, no glyph
names), head. Kept as they are: OS/2, name (the copyright and license
notices), cvt, fpgm, prep, gasp. Dropped: GDEF, GPOS, GSUB, MATH, FFTM
(they index glyphs by the old numbers). The license (LICENSE-DejaVu.txt)
allows modification; the family name contains neither "Bitstream" nor "Vera".
Standard library only.
"""
import struct
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
DST = __file__.rsplit("/", 1)[0] + "/DejaVuSans-subset.ttf" if "/" in __file__ else "DejaVuSans-subset.ttf"

CHARS = (
    list(range(0x20, 0x7F))
    + list(range(0xA0, 0x100))
    + list(range(0x3B1, 0x3CA))
    + [0x2009, 0x2013, 0x2014, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2026, 0x2030,
       0x2190, 0x2192, 0x2212, 0x2248, 0x2264, 0x2265]
)
KEEP_AS_IS = [b"OS/2", b"name", b"cvt ", b"fpgm", b"prep", b"gasp"]


def u16(b, o):
    return struct.unpack_from(">H", b, o)[0]


def u32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def read_tables(data):
    n = u16(data, 4)
    tables = {}
    for i in range(n):
        tag, _, off, length = struct.unpack_from(">4sIII", data, 12 + 16 * i)
        tables[tag] = data[off:off + length]
    return tables


def cmap_format4(cmap):
    """char -> glyph from the (3,1) format 4 subtable."""
    for i in range(u16(cmap, 2)):
        pid, eid, off = struct.unpack_from(">HHI", cmap, 4 + 8 * i)
        if (pid, eid) == (3, 1) and u16(cmap, off) == 4:
            break
    else:
        sys.exit("no (3,1) format 4 cmap subtable")
    segs = u16(cmap, off + 6) // 2
    ends = off + 14
    starts = ends + 2 * segs + 2
    deltas = starts + 2 * segs
    ranges = deltas + 2 * segs
    out = {}
    for s in range(segs):
        end, start = u16(cmap, ends + 2 * s), u16(cmap, starts + 2 * s)
        delta, ro = u16(cmap, deltas + 2 * s), u16(cmap, ranges + 2 * s)
        for c in range(start, end + 1):
            if c == 0xFFFF:
                continue
            if ro == 0:
                g = (c + delta) & 0xFFFF
            else:
                g = u16(cmap, ranges + 2 * s + ro + 2 * (c - start))
                g = (g + delta) & 0xFFFF if g else 0
            if g:
                out[c] = g
    return out


def glyph_slices(tables):
    num = u16(tables[b"maxp"], 4)
    long_loca = u16(tables[b"head"], 50) == 1
    loca = tables[b"loca"]
    if long_loca:
        offs = [u32(loca, 4 * i) for i in range(num + 1)]
    else:
        offs = [2 * u16(loca, 2 * i) for i in range(num + 1)]
    glyf = tables[b"glyf"]
    return [glyf[offs[i]:offs[i + 1]] for i in range(num)]


def components(g):
    """Offsets of the component glyph indexes of a composite glyph."""
    if len(g) < 10 or struct.unpack_from(">h", g, 0)[0] >= 0:
        return []
    out, o = [], 10
    while True:
        flags = u16(g, o)
        out.append(o + 2)
        o += 4 + (4 if flags & 0x0001 else 2)
        if flags & 0x0008:
            o += 2
        elif flags & 0x0040:
            o += 4
        elif flags & 0x0080:
            o += 8
        if not flags & 0x0020:
            return out


def build_cmap(char_to_new):
    chars = sorted(char_to_new)
    segs = []  # (start, end, delta) runs of consecutive chars and glyphs
    for c in chars:
        g = char_to_new[c]
        if segs and segs[-1][1] == c - 1 and char_to_new[c - 1] == g - 1:
            segs[-1][1] = c
        else:
            segs.append([c, c, (g - c) & 0xFFFF])
    segs.append([0xFFFF, 0xFFFF, 1])
    n = len(segs)
    search = 2 * (1 << (n.bit_length() - 1))
    sub = struct.pack(">HHHHHHH", 4, 16 + 8 * n, 0, 2 * n, search, (search // 2).bit_length() - 1, 2 * n - search)
    sub += b"".join(struct.pack(">H", s[1]) for s in segs) + b"\0\0"
    sub += b"".join(struct.pack(">H", s[0]) for s in segs)
    sub += b"".join(struct.pack(">H", s[2]) for s in segs)
    sub += b"\0\0" * n
    return struct.pack(">HHHHIHHI", 0, 2, 0, 3, 20, 3, 1, 20) + sub


def build_kern(kern, old_to_new):
    if u16(kern, 0) != 0:
        return None
    out = []
    o = 4
    for _ in range(u16(kern, 2)):
        length, coverage = u16(kern, o + 2), u16(kern, o + 4)
        if coverage >> 8 == 0:
            n = u16(kern, o + 6)
            for i in range(n):
                left, right, value = struct.unpack_from(">HHh", kern, o + 14 + 6 * i)
                if left in old_to_new and right in old_to_new:
                    out.append((old_to_new[left], old_to_new[right], value))
        o += length
    if not out:
        return None
    out.sort()
    n = len(out)
    search = 6 * (1 << (n.bit_length() - 1))
    pairs = b"".join(struct.pack(">HHh", *p) for p in out)
    sub = struct.pack(">HHHHHHH", 0, 14 + len(pairs), 0x0001, n, search, (search // 6).bit_length() - 1, 6 * n - search)
    return struct.pack(">HH", 0, 1) + sub + pairs


def checksum(b):
    b += b"\0" * (-len(b) % 4)
    return sum(struct.unpack(">%dI" % (len(b) // 4), b)) & 0xFFFFFFFF


def main():
    data = open(SRC, "rb").read()
    t = read_tables(data)
    glyphs = glyph_slices(t)
    cmap = cmap_format4(t[b"cmap"])
    want = {c: cmap[c] for c in CHARS if c in cmap}
    keep = {0} | set(want.values())
    todo = list(keep)
    while todo:
        g = glyphs[todo.pop()]
        for o in components(g):
            c = u16(g, o)
            if c not in keep:
                keep.add(c)
                todo.append(c)
    order = sorted(keep)
    old_to_new = {old: new for new, old in enumerate(order)}

    glyf, loca = b"", []
    for old in order:
        g = bytearray(glyphs[old])
        for o in components(bytes(g)):
            struct.pack_into(">H", g, o, old_to_new[u16(g, o)])
        g += b"\0" * (-len(g) % 4)
        loca.append(len(glyf))
        glyf += bytes(g)
    loca.append(len(glyf))

    n_metrics = u16(t[b"hhea"], 34)
    hmtx_old = t[b"hmtx"]

    def metric(old):
        if old < n_metrics:
            return hmtx_old[4 * old:4 * old + 4]
        adv = hmtx_old[4 * (n_metrics - 1):4 * n_metrics - 2]
        lsb = hmtx_old[4 * n_metrics + 2 * (old - n_metrics):4 * n_metrics + 2 * (old - n_metrics) + 2]
        return adv + lsb

    new = {tag: t[tag] for tag in KEEP_AS_IS if tag in t}
    new[b"glyf"] = glyf
    new[b"loca"] = b"".join(struct.pack(">I", o) for o in loca)
    new[b"hmtx"] = b"".join(metric(old) for old in order)
    hhea = bytearray(t[b"hhea"])
    struct.pack_into(">H", hhea, 34, len(order))
    new[b"hhea"] = bytes(hhea)
    maxp = bytearray(t[b"maxp"])
    struct.pack_into(">H", maxp, 4, len(order))
    new[b"maxp"] = bytes(maxp)
    head = bytearray(t[b"head"])
    struct.pack_into(">I", head, 8, 0)  # checkSumAdjustment, set below
    struct.pack_into(">h", head, 50, 1)  # long loca offsets
    new[b"head"] = bytes(head)
    post = bytearray(t[b"post"][:32])
    struct.pack_into(">I", post, 0, 0x00030000)
    new[b"post"] = bytes(post)
    new[b"cmap"] = build_cmap({c: old_to_new[g] for c, g in want.items()})
    kern = build_kern(t[b"kern"], old_to_new) if b"kern" in t else None
    if kern:
        new[b"kern"] = kern

    tags = sorted(new)
    n = len(tags)
    sr = 16 * (1 << (n.bit_length() - 1))
    header = struct.pack(">IHHHH", 0x00010000, n, sr, (sr // 16).bit_length() - 1, 16 * n - sr)
    offset = 12 + 16 * n
    directory, body = b"", b""
    for tag in tags:
        b = new[tag]
        directory += struct.pack(">4sIII", tag, checksum(b), offset + len(body), len(b))
        body += b + b"\0" * (-len(b) % 4)
    font = bytearray(header + directory + body)
    head_at = offset + sum(len(new[x]) + (-len(new[x]) % 4) for x in tags[: tags.index(b"head")])
    struct.pack_into(">I", font, head_at + 8, (0xB1B0AFBA - checksum(bytes(font))) & 0xFFFFFFFF)
    open(DST, "wb").write(font)
    print(f"{DST}: {len(order)} glyphs, {len(want)} characters, {len(font)} bytes")


main()
