"""The status page as one self-contained HTML document (``GET /status``).

Rendered on the server from ``status_view``'s data: inline CSS, inline SVG
plots, and a few lines of inline script that fetch the page again every
``refresh`` seconds (``server.status.refresh_seconds``) and swap its content
in place, so the scroll position stays put (without script, a
``<meta http-equiv=refresh>`` reloads it, in whole seconds: the tag takes no
fraction). No asset is loaded from anywhere. Lanes that need someone come
first, in red (``down``) or amber (``warn``), each with the reasons in words;
healthy rows stay plain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

SPARK_WIDTH = 120
SPARK_HEIGHT = 22
COLUMNS = (
    ("lane / source", 10.5),
    ("state", 14),
    ("health", 6),
    ("breaker", 6),
    ("AIMD limit", 6),
    ("quota used", 7),
    ("requests", 5.5),
    ("errors", 5.5),
    ("push-backs · hedges", 5),
    ("latency p50 / p99", 7),
    ("TTFT p50 / p99", 7),
    ("tokens in / out", 6),
    ("cost", 6.5),
    ("last hour: requests (failed in red), p99 latency", 10.5),
)
"""Each column's heading and share of the width (percent, summing to about 100)."""

_STYLE = """
*{box-sizing:border-box}
body{margin:0;font:13px/1.35 system-ui,sans-serif;color:#222;background:#fafafa}
header{display:flex;gap:16px;align-items:baseline;padding:10px 16px;background:#fff;
 border-bottom:1px solid #ddd;flex-wrap:wrap}
h1{font-size:17px;margin:0}
.pill{padding:2px 9px;border-radius:10px;font-weight:600}
.pill.down{background:#c62828;color:#fff}.pill.warn{background:#f2b705;color:#222}
.pill.ok{background:#e3efe3;color:#2e6b2e}
.meta{color:#666}.stale{display:none;color:#c62828;font-weight:600}
body.stale .stale{display:inline}
main{padding:8px 16px 24px}
table{width:100%;table-layout:fixed;border-collapse:collapse;background:#fff}
th{font-size:11px;font-weight:600;color:#555;text-align:left;padding:6px 4px;
 border-bottom:2px solid #ccc;vertical-align:bottom}
td{padding:5px 4px;vertical-align:top;border-top:1px solid #eee;overflow-wrap:anywhere}
tbody{border-top:2px solid #ccc}
tr.lane td{font-weight:600;background:#f6f6f6}
tr.source td:first-child{padding-left:16px}
tbody.down tr.lane td{background:#fbe3e3}tbody.warn tr.lane td{background:#fdf3d0}
tr.source.down td{background:#fdf0f0}tr.source.warn td{background:#fffaeb}
tr.down td:first-child{box-shadow:inset 4px 0 #c62828}
tr.warn td:first-child{box-shadow:inset 4px 0 #f2b705}
.badge{display:inline-block;font-size:11px;font-weight:700;padding:0 5px;border-radius:3px}
.badge.down{background:#c62828;color:#fff}.badge.warn{background:#f2b705}
.badge.ok{background:#e3efe3;color:#2e6b2e}
.reasons{margin:2px 0 0;padding:0;list-style:none;font-weight:400;font-size:12px}
.down .reasons{color:#8e1b1b}
small,.hour{display:block;color:#777;font-weight:400;font-size:11px}
.hour::before{content:"1h "}
.open{color:#c62828;font-weight:700}.half-open{color:#a66f00;font-weight:700}
.num{font-variant-numeric:tabular-nums}
svg{display:block}
h2{font-size:15px;margin:18px 0 6px}
"""

_SCRIPT = (
    "(()=>{const every=EVERY;async function tick(){try{const r=await fetch(location.href,"
    "{cache:'no-store',credentials:'same-origin'});if(!r.ok)throw r.status;"
    "const doc=new DOMParser().parseFromString(await r.text(),'text/html');"
    "for(const id of ['top','status']){const fresh=doc.getElementById(id);"
    "if(fresh)document.getElementById(id).replaceWith(fresh)}"
    "document.body.classList.remove('stale');"
    "document.body.dataset.refreshes=(+document.body.dataset.refreshes||0)+1}"
    "catch(e){document.body.classList.add('stale')}setTimeout(tick,every)}"
    "setTimeout(tick,every)})();"
)


def render_page(data: dict[str, Any], refresh: float) -> bytes:
    """The whole document, refreshing itself every ``refresh`` seconds."""
    head = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{_title(data)}</title>"
        f"<noscript><meta http-equiv=refresh content={math.ceil(refresh)}></noscript>"
        f"<style>{_STYLE}</style></head><body>"
    )
    table = "".join(_lane(lane) for lane in data["lanes"])
    cols = "".join(f"<col style='width:{share}%'>" for _, share in COLUMNS)
    heads = "".join(f"<th>{name}</th>" for name, _ in COLUMNS)
    return (
        head
        + _header(data, refresh)
        + f"<main id=status><table><colgroup>{cols}</colgroup><thead><tr>{heads}</tr></thead>"
        + table
        + "</table>"
        + _budgets(data.get("budgets", []))
        + "</main>"
        + f"<script>{_script(refresh)}</script></body></html>"
    ).encode()


def _budgets(rows: Sequence[dict[str, Any]]) -> str:
    """Keys' and teams' spend against their budgets, the most spent first (none: nothing)."""
    if not rows:
        return ""
    body = "".join(
        f"<tr class='{row['verdict']}'><td>{escape(row['owner'])} "
        f"<b>{escape(row['name'])}</b>"
        + (f"<small>{len(row['keys'])} keys</small>" if row["owner"] == "team" else "")
        + f"</td><td>{escape(row['period'])} <small>{escape(row['period_name'])}</small></td>"
        f"<td class=num>{usd(row['spent_usd'])} of {usd(row['budget_usd'])}</td>"
        f"<td class=num>{_state(row['verdict'], [])} {row['share']:.0%}</td></tr>"
        for row in rows
    )
    heads = "".join(f"<th>{name}</th>" for name in ("key / team", "period", "spent", "of budget"))
    return f"<h2>Budgets</h2><table class=budgets><thead><tr>{heads}</tr></thead>{body}</table>"


def _script(refresh: float) -> str:
    """The script that refreshes the page in place every ``refresh`` seconds."""
    return _SCRIPT.replace("EVERY", str(round(refresh * 1000)))


def _title(data: dict[str, Any]) -> str:
    counts = data["lanes_by_verdict"]
    bad = counts["down"] + counts["warn"]
    return "laneway status" if not bad else f"({bad}) laneway status"


def _header(data: dict[str, Any], refresh: float) -> str:
    counts = data["lanes_by_verdict"]
    pills = [
        f"<span class='pill {verdict}'>{counts[verdict]} {label}</span>"
        for verdict, label in (("down", "down"), ("warn", "need a look"), ("ok", "healthy"))
        if counts[verdict] or verdict == "ok"
    ]
    worker = data["worker"]
    return (
        "<header id=top><h1>laneway status</h1>"
        + "".join(pills)
        + f"<span class=meta>at {escape(data['generated_at'])}, refreshed every "
        f"{refresh:g} s · answered by worker pid {worker['pid']} · history: "
        f"{escape(worker['history'])} · figures: the last {data['now_seconds']} s, "
        "the last hour (1h) below</span>"
        "<span class=stale>refresh failed: figures may be old</span></header>"
    )


def _lane(lane: dict[str, Any]) -> str:
    verdict = lane["verdict"]
    ready = sum(s["ready"] for s in lane["sources"])
    opened = sum(s["breaker"] != "closed" for s in lane["sources"])
    count = len(lane["sources"])
    breakers = f"<span class=open>{opened} not closed</span>" if opened else "all closed"
    fallbacks = ", ".join(lane["fallback_lanes"])
    falls_back = f" · falls back to {escape(fallbacks)}" if fallbacks else ""
    cells = [
        f"{escape(lane['name'])}<small>{escape(lane['kind'])} lane · {count} source(s)"
        f"{falls_back}</small>",
        _state(verdict, lane["reasons"]),
        f"{ready}/{count} ready",
        breakers,
        "",
        "",
    ]
    row = _row("lane " + verdict, lane["name"], cells + _figure_cells(lane))
    sources = "".join(_source(source) for source in lane["sources"])
    return f"<tbody class={verdict} data-lane='{escape(lane['name'])}'>{row}{sources}</tbody>"


def _source(source: dict[str, Any]) -> str:
    verdict = source["verdict"]
    breaker = source["breaker"]
    if breaker == "open":
        probe = f"probe in {source['breaker_reopens_in']:.0f} s"
        breaker_cell = f"<span class=open>open</span><small>{probe}</small>"
    elif breaker == "half-open":
        breaker_cell = "<span class=half-open>half-open</span>"
    else:
        breaker_cell = "closed"
    cells = [
        f"{escape(source['name'])}<small>{escape(source['provider'])} · "
        f"{escape(source['model'])}</small>",
        _state(verdict, source["reasons"]),
        _health(source),
        breaker_cell,
        _concurrency(source["concurrency"]),
        _quota(source["quota"]),
    ]
    return _row("source " + verdict, source["name"], cells + _figure_cells(source))


def _health(source: dict[str, Any]) -> str:
    """The health score and tier; a source with no logged attempt is untried, not 100%."""
    if source["health"] is None:
        return "-<small>untried</small>"
    return f"{source['health']:.0%}<small>{source['tier']}</small>"


def _row(classes: str, name: str, cells: Sequence[str]) -> str:
    tds = "".join(f"<td class=num>{cell}</td>" for cell in cells)
    return f"<tr class='{classes}' data-name='{escape(name)}'>{tds}</tr>"


def _state(verdict: str, reasons: Sequence[str]) -> str:
    label = {"down": "DOWN", "warn": "LOOK", "ok": "OK"}[verdict]
    items = "".join(f"<li>{escape(reason)}</li>" for reason in reasons)
    listed = f"<ul class=reasons>{items}</ul>" if items else ""
    return f"<span class='badge {verdict}'>{label}</span>{listed}"


def _concurrency(concurrency: dict[str, Any] | None) -> str:
    if concurrency is None:
        return "<small>unlimited</small>"
    return (
        f"{concurrency['limit']:g}<small>{concurrency['in_flight']} in flight · "
        f"{concurrency['min']}–{concurrency['max']}</small>"
    )


def _quota(quota: dict[str, Any] | None) -> str:
    if quota is None:
        return "<small>none</small>"
    parts = []
    if quota["rpm"] is not None:
        parts.append(f"rpm {quota['requests']}/{quota['rpm']}")
    if quota["tpm"] is not None:
        parts.append(f"tpm {_count(quota['tokens'])}/{_count(quota['tpm'])}")
    group = f"<small>group {escape(quota['group'])}</small>" if quota["group"] else ""
    return "<br>".join(parts) + group


def _figure_cells(row: dict[str, Any]) -> list[str]:
    """The traffic columns: the last minute above, the last hour below."""
    now, hour = row["now"], row["hour"]
    return [
        _pair(str(now["requests"]), str(hour["requests"])),
        _pair(_errors(now), _errors(hour)),
        _pair(_pushbacks(now), _pushbacks(hour)),
        _pair(_percentiles(now, "latency"), _percentiles(hour, "latency")),
        _pair(_percentiles(now, "ttft"), _percentiles(hour, "ttft")),
        _pair(_tokens(now), _tokens(hour)),
        _pair(usd(now["cost_usd"]), usd(hour["cost_usd"])),
        _traffic_svg(row["points"]) + _latency_svg(row["points"]["latency_p99"]),
    ]


def _pair(now: str, hour: str) -> str:
    return f"{now}<span class=hour>{hour}</span>"


def _pushbacks(figures: dict[str, Any]) -> str:
    """Push-backs, then the hedges raced when there were any: per call, won and lost."""
    text = str(figures["pushbacks"])
    if not figures["hedges"]:
        return text
    rate = figures["hedge_rate"]
    per_call = "" if rate is None else f" · {rate:.1%} of calls"
    return (
        f"{text}<small>hedged {figures['hedges']}{per_call} · won {figures['hedges_won']}, "
        f"lost {figures['hedges_lost']}</small>"
    )


def _errors(figures: dict[str, Any]) -> str:
    rate = figures["error_rate"]
    if not figures["errors"]:
        return "0"
    return f"{figures['errors']} · {rate:.0%}"


def _percentiles(figures: dict[str, Any], name: str) -> str:
    p50, p99 = figures[f"{name}_p50"], figures[f"{name}_p99"]
    if p50 is None:
        return "–"
    return f"{_seconds(p50)} / {_seconds(p99)}"


def _seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def _tokens(figures: dict[str, Any]) -> str:
    return f"{_count(figures['prompt_tokens'])} / {_count(figures['completion_tokens'])}"


def _count(value: int) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return str(value)


def usd(value: float) -> str:
    """Dollars with two significant digits below $1, so a small nonzero cost never reads $0."""
    if not value:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    digits = max(4, 1 - math.floor(math.log10(value)))
    return f"${value:.{digits}f}"


def _traffic_svg(points: dict[str, list[Any]]) -> str:
    """Requests per minute as grey bars, the failed part of each in red."""
    requests, errors = points["requests"], points["errors"]
    top = max(max(requests), 1)
    step = SPARK_WIDTH / len(requests)
    bars = []
    for i, (total, failed) in enumerate(zip(requests, errors, strict=True)):
        if not total:
            continue
        x = f"{i * step:.1f}"
        h = max(SPARK_HEIGHT * total / top, 1.0)
        bars.append(_rect(x, h, step, ""))
        if failed:
            bars.append(_rect(x, max(SPARK_HEIGHT * failed / top, 1.0), step, "#c62828"))
    label = f"requests per minute over the last hour, most {top}; failed part in red"
    return _svg("traffic", label, "<g fill='#9aa5b1'>" + "".join(bars) + "</g>")


def _rect(x: str, height: float, width: float, fill: str) -> str:
    paint = f" fill='{fill}'" if fill else ""
    return (
        f"<rect x='{x}' y='{SPARK_HEIGHT - height:.1f}' width='{width:.1f}' "
        f"height='{height:.1f}'{paint}></rect>"
    )


def _latency_svg(p99: list[float | None]) -> str:
    """The p99 latency of each minute as a line (gaps where no call ended)."""
    known = [v for v in p99 if v is not None]
    top = max(known, default=0.0) or 1.0
    step = SPARK_WIDTH / len(p99)
    runs: list[list[str]] = [[]]
    for i, value in enumerate(p99):
        if value is None:
            if runs[-1]:
                runs.append([])
            continue
        y = SPARK_HEIGHT - 1 - (SPARK_HEIGHT - 2) * value / top
        runs[-1].append(f"{(i + 0.5) * step:.1f},{y:.1f}")
    lines = "".join(_line(run) for run in runs if run)
    label = f"p99 latency per minute over the last hour, highest {_seconds(top)}"
    body = f"<g fill='none' stroke='#3b6ea8' stroke-width='1.5'>{lines}</g>"
    return _svg("latency", label, body)


def _line(run: list[str]) -> str:
    """A polyline through the points, or a dot for a point standing alone."""
    if len(run) > 1:
        return f"<polyline points='{' '.join(run)}'></polyline>"
    x, y = run[0].split(",")
    return f"<circle cx='{x}' cy='{y}' r='1.5' fill='#3b6ea8'></circle>"


def _svg(kind: str, label: str, body: str) -> str:
    return (
        f"<svg class='spark {kind}' role='img' aria-label='{escape(label)}' "
        f"width='{SPARK_WIDTH}' height='{SPARK_HEIGHT}' "
        f"viewBox='0 0 {SPARK_WIDTH} {SPARK_HEIGHT}'>"
        f"<title>{escape(label)}</title>{body}</svg>"
    )
