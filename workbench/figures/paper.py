"""Chart builders for the paper's figures. Each takes a Polars frame and returns an Altair chart.

Every chart has a title, axis titles with units, and a legend; a ``provenance`` column, when
present, keeps "paper (phones)" and "this run" apart instead of blending them.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import polars as pl

METHOD_ORDER = ["target_only", "sd", "asp", "as2d_wo_td", "as2d_wo_bc", "as2d", "as2d_online"]
METHOD_LABEL = {
    "target_only": "Target-only",
    "sd": "SD (mean K=5..8)",
    "asp": "SpecASR (ASP)",
    "as2d_wo_td": "As²d w/o TD",
    "as2d_wo_bc": "As²d w/o BC",
    "as2d": "As²d",
    "as2d_online": "As²d online",
}
# One colour per method in every figure (keyed by the label charts show); colour-blind-safe Tableau hues.
METHOD_COLOR = {
    "Target-only": "#7f7f7f",
    "SD (mean K=5..8)": "#1f77b4",
    "SpecASR (ASP)": "#ff7f0e",
    "As²d w/o TD": "#9467bd",
    "As²d w/o BC": "#8c564b",
    "As²d": "#d62728",
    "As²d online": "#2ca02c",
    # the adaptive variants beyond the paper (docs/adaptive.md), named as their figure names them
    "as2d_guarded": "#17becf",
    "as2d_subst": "#e377c2",
    "as2d_hybrid": "#aec7e8",
    "as2d_sources": "#ffbb78",
    "as2d_adaptive": "#98df8a",
    "online_source_hindsight": "#c7c7c7",
    "resident_choice_hindsight": "#dbdb8d",
}
# Figures that show scheme names (``as2d``) or the adaptive figure's fixed As²d colour them by the label.
METHOD_ALIAS = {**METHOD_LABEL, "as2d_fixed": METHOD_LABEL["as2d"]}
OTHER_COLOR = "#bcbd22"  # a label outside the catalog (e.g. a native row): one fixed hue, never a reused one


def _palette_key(value: str) -> str:
    return METHOD_ALIAS.get(value, value)


def method_color(present: list[str] | pl.Series, title: str = "Method", field: str = "Method",
                 legend: bool = True) -> alt.Color:
    """The shared method palette for the methods ``present`` in a chart (labels such as ``As²d`` or scheme
    names such as ``as2d``: the same colour either way), in catalog order."""
    labels = list(dict.fromkeys(str(x) for x in present))
    rank = {m: i for i, m in enumerate(METHOD_COLOR)}
    order = sorted(labels, key=lambda x: (rank.get(_palette_key(x), len(rank)), x))
    return alt.Color(f"{field}:N", title=title, sort=order, legend=alt.Undefined if legend else None,
                     scale=alt.Scale(domain=order, range=[METHOD_COLOR.get(_palette_key(x), OTHER_COLOR)
                                                         for x in order]))


def _need(df: pl.DataFrame, cols: list[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: frame lacks column(s) {missing}; has {df.columns}")


def tps_cdf(df: pl.DataFrame, title: str = "Per-window decoding throughput (Fig. 5)",
            subtitle: str | None = None) -> alt.FacetChart:
    """Empirical CDF of per-window TPS per method, one panel per device (columns device, method, tps)."""
    _need(df, ["device", "method", "tps"], "tps_cdf")
    cdf = (
        df.sort("tps")
        .with_columns(
            (pl.col("tps").rank("ordinal").over(["device", "method"]) / pl.len().over(["device", "method"])).alias(
                "cdf"
            ),
            pl.col("method").replace_strict(METHOD_LABEL, default=pl.col("method")).alias("Method"),
        )
    )
    base = alt.Chart(cdf).mark_line(interpolate="step-after").encode(
        x=alt.X("tps:Q", title="Decoding throughput (tokens/s)"),
        y=alt.Y("cdf:Q", title="Share of windows", scale=alt.Scale(domain=[0, 1])),
        color=method_color(cdf["Method"]),
    ).properties(width=260, height=180)
    return base.facet(facet=alt.Facet("device:N", title="Device profile"), columns=2).resolve_scale(
        x="independent"
    ).properties(title=_title(title, subtitle))


def batching_saving(df: pl.DataFrame, title: str = "Per-position batching saving R(K) (Fig. 8, eq. 2)") -> alt.Chart:
    """R(K) = 100 (1 - V(K) / (K V(1))) per device (columns device, K, saving_pct[, provenance])."""
    _need(df, ["device", "K", "saving_pct"], "batching_saving")
    color = "device:N"
    enc = {
        "x": alt.X("K:O", title="Physical verification width K (tokens)"),
        "y": alt.Y("saving_pct:Q", title="Saving per verified position (%)"),
        "color": alt.Color(color, title="Device"),
    }
    enc["shape"] = alt.Shape(color, legend=None)  # equal curves stay visible: distinct point shapes
    enc["tooltip"] = ["device", "K", alt.Tooltip("saving_pct:Q", format=".1f")]
    chart = alt.Chart(df).mark_line(point=alt.OverlayMarkDef(size=50, filled=True), opacity=0.8).encode(**enc)
    if "provenance" in df.columns:  # one panel per source of numbers, named once in its header
        return chart.properties(width=300, height=240).facet(
            column=alt.Column("provenance:N", title=None, sort=["paper (phones)"])).properties(title=title)
    return chart.properties(width=420, height=260, title=title)


def drafting_share(df: pl.DataFrame, title: str = "Drafting share of serial SD time (Fig. 3a)") -> alt.Chart:
    """Columns device, share_pct[, provenance]."""
    _need(df, ["device", "share_pct"], "drafting_share")
    enc = {
        "x": alt.X("device:N", title="Device profile"),
        "y": alt.Y("share_pct:Q", title="Drafting share of decode time (%)", scale=alt.Scale(domain=[0, 100])),
        "color": alt.Color("provenance:N" if "provenance" in df.columns else "device:N", title="Source"),
    }
    if "provenance" in df.columns:
        enc["xOffset"] = "provenance:N"
    return alt.Chart(df).mark_bar().encode(**enc).properties(width=360, height=240, title=title)


def timeline(stages: pl.DataFrame, rounds: pl.DataFrame | None = None,
             title: str = "Producer vs verifier timeline (Fig. 1 / Fig. 6)", subtitle: str | None = None,
             time_title: str = "Time since prefill (ms)") -> alt.LayerChart:
    """Gantt of stage intervals (resource, stage, start, end in seconds), with K and rejections marked."""
    _need(stages, ["resource", "stage", "start", "end"], "timeline")
    st = stages.with_columns((pl.col("start") * 1e3).alias("start_ms"), (pl.col("end") * 1e3).alias("end_ms"))
    bars = alt.Chart(st).mark_bar(height=18, stroke="white", strokeWidth=0.5).encode(
        x=alt.X("start_ms:Q", title=time_title),
        x2="end_ms:Q",
        y=alt.Y("resource:N", title=None, sort=["producer", "verifier"]),
        color=alt.Color("stage:N", title="Stage"),
        tooltip=["stage", "start_ms", "end_ms"],
    )
    layers = [bars]
    if rounds is not None and len(rounds):
        _need(rounds, ["t_start", "t_end", "width", "outcome"], "timeline rounds")
        ready = pl.col("ready") if "ready" in rounds.columns else pl.lit(None)
        r = rounds.with_columns(
            ((pl.col("t_start") + pl.col("t_end")) * 500).alias("mid_ms"),
            pl.lit("verifier").alias("resource"),
            # K1 rounds say only "K1"; wider calls also show how many candidates were ready.
            pl.when(pl.col("width") > 1).then(pl.format("K{} ({} ready)", pl.col("width"), ready))
            .otherwise(pl.format("K{}", pl.col("width"))).alias("label"),
            pl.when(pl.col("outcome") == "correction").then(pl.lit("rejection (target corrected)"))
            .otherwise(pl.lit("all verified candidates accepted")).alias("Result"),
        )
        y = alt.Y("resource:N", sort=["producer", "verifier"])
        layers.append(alt.Chart(r).mark_text(dy=-16, fontSize=9).encode(x="mid_ms:Q", y=y, text="label:N"))
        layers.append(alt.Chart(r.filter(pl.col("width") > 1)).mark_point(filled=True, size=60, dy=2).encode(
            x="mid_ms:Q", y=y,
            shape=alt.Shape("Result:N", title="Verification round",
                            scale=alt.Scale(domain=["rejection (target corrected)", "all verified candidates accepted"],
                                            range=["triangle-down", "circle"])),
            fill=alt.Fill("Result:N", legend=None,
                          scale=alt.Scale(domain=["rejection (target corrected)", "all verified candidates accepted"],
                                          range=["firebrick", "black"]))))
    return alt.layer(*layers).properties(width=720, height=120, title=_title(title, subtitle))


def budget_tradeoff(df: pl.DataFrame, title: str = "Source and budget trade-off (Tables 13/14)",
                    subtitle: str | None = None, names: Mapping[str, str] | None = None) -> alt.Chart:
    """Pooled TPS vs budget per source (columns source, budget, tps[, device]).

    ``names`` maps a profile's source name (what priced a trace, e.g. the paper's drafter) to what made
    the trace (``tracking.run_records.source_names``): the legend names the producer, never the costs.
    """
    _need(df, ["source", "budget", "tps"], "budget_tradeoff")
    if names:
        df = df.with_columns(pl.col("source").replace(dict(names)))
    chart = alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("budget:O", title="Proposal budget b (tokens after the root)"),
        y=alt.Y("tps:Q", title="Pooled throughput (tokens/s)"),
        color=alt.Color("source:N", title="Candidate source"),
    ).properties(width=300, height=220)
    if "device" in df.columns:
        return chart.facet(facet=alt.Facet("device:N", title="Device profile"), columns=2).resolve_scale(
            y="independent").properties(title=_title(title, subtitle))
    return chart.properties(title=_title(title, subtitle))


def replay_error(df: pl.DataFrame, title: str = "Replay vs native TPS error per window (D.3)",
                 subtitle: str | None = None) -> alt.Chart:
    """Columns window_id, signed_error_pct; with noise_floor_pct (D.3's native noise floor,
    ``workbench.native.noise_floor``) a black whisker from -floor to +floor on each bar: an error inside it is
    within what the native median's own spread allows."""
    _need(df, ["window_id", "signed_error_pct"], "replay_error")
    x = alt.X("window_id:N", title="Validation window", sort=list(dict.fromkeys(df["window_id"].to_list())))
    # only the drawn columns: a NaN elsewhere in the frame (a floor from one repetition) is not valid JSON
    bars = alt.Chart(df.select("window_id", "signed_error_pct")).mark_bar().encode(
        x=x, y=alt.Y("signed_error_pct:Q", title="Signed TPS error, replay vs native (%)"),
        color=alt.Color("direction:N", title="Replay vs native",
                        scale=alt.Scale(domain=["replay faster", "replay slower"], range=["steelblue", "darkorange"])),
    ).transform_calculate(direction="datum.signed_error_pct > 0 ? 'replay faster' : 'replay slower'")
    layers: list[alt.Chart] = [bars]
    if "noise_floor_pct" in df.columns and df["noise_floor_pct"].is_not_nan().any():
        floor = alt.Chart(df.filter(pl.col("noise_floor_pct").is_not_nan()).select("window_id", "noise_floor_pct")
                          ).encode(x=x).transform_calculate(
            lo="-datum.noise_floor_pct", hi="datum.noise_floor_pct")
        layers += [floor.mark_rule(color="black", opacity=0.45, strokeWidth=3).encode(y="lo:Q", y2="hi:Q"),
                   floor.mark_tick(color="black", thickness=2, size=18).encode(y="lo:Q"),
                   floor.mark_tick(color="black", thickness=2, size=18).encode(y="hi:Q")]
        note = "whiskers: +- the noise floor of the native median"
        subtitle = f"{subtitle}; {note}" if subtitle else note
    return alt.layer(*layers).properties(width=420, height=240, title=_title(title, subtitle))


def decomposition(df: pl.DataFrame, title: str = "Overlap decomposition D, V, O, H (D.2.7)",
                  subtitle: str | None = None) -> alt.Chart:
    """Stacked service times per method (columns method, term in {D,V,O,H}, seconds)."""
    _need(df, ["method", "term", "seconds"], "decomposition")
    if "device" in df.columns:  # jobs label rows "device/method": one panel per device, methods on x
        df = df.with_columns(pl.col("method").str.replace(r"^[^/]+/", ""))
    chart = alt.Chart(df).mark_bar().encode(
        x=alt.X("method:N", title="Method", axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("seconds:Q", title="Service time per window set (s)"),
        xOffset=alt.XOffset("term:N", sort=["D", "V", "O", "H"]),
        color=alt.Color("term:N", title="Term (D.2.7)", sort=["D", "V", "O", "H"]),
        tooltip=["method", "term", alt.Tooltip("seconds:Q", format=".3f")],
    ).properties(width=260, height=200)
    if "device" in df.columns:
        return chart.facet(facet=alt.Facet("device:N", title="Device profile"), columns=3).resolve_scale(
            x="independent", xOffset="independent", y="independent").properties(title=_title(
                title, subtitle or "y scale per panel (devices differ by 10x)"))
    return chart.properties(title=_title(title, subtitle))


def _title(title: str, subtitle: str | None) -> alt.TitleParams | str:
    return alt.TitleParams(title, subtitle=subtitle.split("\n")) if subtitle else title


def side_by_side_bars(df: pl.DataFrame, x: str, y: str, color: str, title: str, x_title: str, y_title: str,
                      color_title: str, subtitle: str | None = None, x_sort: list[str] | None = None,
                      y_domain: list[float] | None = None) -> alt.FacetChart:
    """Grouped bars, one panel per ``provenance`` ("paper (phones)" | "this run"): never one blended bar."""
    _need(df, [x, y, color, "provenance"], "side_by_side_bars")
    yscale = alt.Scale(domain=y_domain) if y_domain else alt.Undefined
    base = alt.Chart(df).mark_bar().encode(
        x=alt.X(f"{x}:N", title=x_title, sort=x_sort or alt.Undefined),
        xOffset=alt.XOffset(f"{color}:N"),
        y=alt.Y(f"{y}:Q", title=y_title, scale=yscale),
        color=method_color(df[color], color_title, color) if color == "Method" else alt.Color(
            f"{color}:N", title=color_title),
        tooltip=[x, color, alt.Tooltip(f"{y}:Q", format=".2f")],
    ).properties(width=300, height=220)
    # One shared y scale (the panels compare directly); x and its offset resolved per panel, or Vega-Lite
    # shares the offset band across panels and draws hairline bars.
    return base.facet(column=alt.Column("provenance:N", title=None, sort=["paper (phones)"])).resolve_scale(
        x="independent", xOffset="independent", y="shared").properties(title=_title(title, subtitle))


def saving_panels(df: pl.DataFrame, title: str = "Per-position batching saving R(K) (Fig. 8, eq. 2)",
                  subtitle: str | None = None) -> alt.FacetChart:
    """R(K) lines per device, one panel per provenance (phone profiles, host measured, paper text)."""
    _need(df, ["device", "K", "saving_pct", "provenance"], "saving_panels")
    base = alt.Chart(df).mark_line(point=alt.OverlayMarkDef(size=60, filled=True), opacity=0.75).encode(
        x=alt.X("K:Q", title="Physical verification width K (tokens)", scale=alt.Scale(domainMin=1)),
        y=alt.Y("saving_pct:Q", title="Saving per verified position R(K) (%)"),
        # Curve labels name their source and date: long, so the legend sits below with no truncation.
        color=alt.Color("device:N", title="Curve (device: where its numbers come from)",
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0, titleLimit=0,
                                          columns=1)),
        shape=alt.Shape("device:N", legend=None),  # curves that coincide stay distinguishable
        tooltip=["device", "K", alt.Tooltip("saving_pct:Q", format=".1f")],
    ).properties(width=260, height=220)
    return base.facet(column=alt.Column("provenance:N", title=None)).properties(title=_title(title, subtitle))


def slowdown_chart(df: pl.DataFrame, title: str = "Windows slower than target-only (Tables 4/12)",
                   subtitle: str | None = None) -> alt.FacetChart:
    """Slower share per device and method, paper and this run in separate panels."""
    return side_by_side_bars(df, "Device", "slower_pct", "Method", title, "Device profile",
                             "Windows below target-only TPS (%)", "Method", subtitle, y_domain=[0, 100])


def device_panels(df: pl.DataFrame, x: str, y: str, color: str, title: str, x_title: str, y_title: str,
                  color_title: str, subtitle: str | None = None, x_sort: list[str] | None = None) -> alt.FacetChart:
    """Grouped bars in one panel per device with its own y scale (devices differ by an order of magnitude).

    ``color`` is usually ``provenance``: the paper's bar and this run's stand side by side, never blended.
    """
    _need(df, [x, y, color, "Device"], "device_panels")
    enc = method_color(df[color], color_title, color) if color == "Method" else alt.Color(
        f"{color}:N", title=color_title, sort=["paper (phones)"])
    base = alt.Chart(df).mark_bar().encode(
        x=alt.X(f"{x}:N", title=x_title, sort=x_sort or alt.Undefined),
        xOffset=alt.XOffset(f"{color}:N", sort=["paper (phones)"]),
        y=alt.Y(f"{y}:Q", title=y_title),
        color=enc,
        tooltip=[x, color, alt.Tooltip(f"{y}:Q", format=".2f")],
    ).properties(width=220, height=180)
    return base.facet(facet=alt.Facet("Device:N", title="Device profile (own y scale)"), columns=3).resolve_scale(
        y="independent").properties(title=_title(title, subtitle))
