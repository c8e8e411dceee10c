"""What the Parquet footers of an edge list say about its size, before any row is read.

``read_edges`` reads every local file's footer anyway (to check the columns); the row counts
and the id columns' min/max statistics there give the figures the sizing needs
(:class:`gpipe.partitioning.sizing.GraphSize`), so that a graph no owners can hold is refused with
``GraphTooLarge`` before the edges are read. Kept with the frame's other read facts
(:class:`gpipe.io.origin.Origin`), and used only when the build is handed that frame as
``read_edges`` returned it: a frame derived from it (filtered, joined) may hold fewer edges,
and is sized after its survey as any other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FooterSurvey:
    """Rows of the edge list and, for integer ids with statistics in every row group, the
    least and largest id (None otherwise)."""

    rows: int
    low: int | None
    high: int | None
    strings: bool


def survey(footers: dict, src: str, dst: str) -> FooterSurvey:
    """The :class:`FooterSurvey` of the files whose pyarrow ``FileMetaData`` are ``footers``."""
    rows, lows, highs, strings, known = 0, [], [], False, True
    for footer in footers.values():
        rows += footer.num_rows
        schema = footer.schema.to_arrow_schema()
        for name in (src, dst):
            kind = schema.field(name).type
            if str(kind) in ("string", "large_string", "string_view"):
                strings = True
                continue
            if not str(kind).startswith(("int", "uint")):
                known = False
                continue
            index = schema.get_field_index(name)
            for g in range(footer.num_row_groups):
                stats = footer.row_group(g).column(index).statistics
                if stats is None or not stats.has_min_max:
                    known = False
                    break
                lows.append(int(stats.min))
                highs.append(int(stats.max))
    if strings or not known or not lows:
        return FooterSurvey(rows, None, None, strings)
    return FooterSurvey(rows, min(lows), max(highs), strings)


def of(frame) -> FooterSurvey | None:
    """The footer survey of ``frame`` if read_edges returned it as it is (or persisted), else None."""
    from gpipe.io import origin

    found = origin.edges_origin(frame)
    return None if found is None else found.footers
