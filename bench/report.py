"""build/bench.json as a Markdown table (for the README and the issue notes)."""

from __future__ import annotations

from typing import Any

ENDPOINTS = (
    "volunteer search, first page",
    "volunteer search, page 150",
    "registration search, first page",
    "registration search, page 150",
    "user search",
    "get user",
    "get registration",
    "departments",
    "current user",
    "token (client_credentials)",
)


def markdown(results: dict[str, Any]) -> str:
    http = results["http"]
    databases = [name for name in ("sqlite", "postgresql") if name in http]
    header = "| endpoint | " + " | ".join(
        f"{db} req/s | p50 / p99 ms | ceiling req/s | ratio" for db in databases
    )
    lines = [
        f"`make bench` of {results['date']}: {http['users']:,} users, {http['volunteers']:,}"
        f" volunteers, {http['connections']} connections, one worker; {results['machine']}.",
        "",
        header + " |",
        "|---" * (1 + 4 * len(databases)) + "|",
    ]
    for name in ENDPOINTS:
        cells = []
        for db in databases:
            row = http[db][name]
            cells.append(
                f"{row['requests_per_second']:,} | {row['p50_ms']} / {row['p99_ms']}"
                f" | {row['ceiling_requests_per_second']:,} | **{row['ratio_to_ceiling']}**"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| server peak memory, demo load | "
        + " | ".join(
            f"{http[db]['server_peak_rss_mb']} MB | | {http[db]['demo_load_seconds']} s |"
            for db in databases
        )
        + " |"
    )
    if "desk" in results:
        lines += ["", *_desk(results["desk"])]
    if "stampede" in results:
        lines += ["", *_stampede(results["stampede"])]
    if "webhooks" in results:
        lines += ["", *_webhooks(results["webhooks"])]
    return "\n".join(lines)


def _desk(desk: dict[str, Any]) -> list[str]:
    databases = [name for name in ("sqlite", "postgresql") if name in desk]
    lines = [
        f"Desk: {desk['desks']} desks checking in at once, {desk['users']:,} users,"
        f" {desk['registrations']:,} registered (one ticket in {desk['double_every']} scanned by"
        " two desks at once).",
        "",
        "| database | check-ins/s | p50 / p99 ms | checked in twice |",
        "|---|---|---|---|",
    ]
    for db in databases:
        row = desk[db]
        lines.append(
            f"| {db} | {row['check_ins_per_second']} | {row['p50_ms']} / {row['p99_ms']}"
            f" | {row['registrations_checked_in_twice']} |"
        )
    return lines


def _stampede(stampede: dict[str, Any]) -> list[str]:
    databases = [name for name in ("sqlite", "postgresql") if name in stampede]
    least, most = stampede["think_seconds"]
    lines = [
        f"Stampede: {stampede['attendees']:,} attendees signing in and registering on /register,"
        f" {stampede['concurrency']} at a time ({least}-{most} s over each form), for"
        f" {stampede['places']:,} places.",
        "",
        "| database | processes | registrations/s | registration p50 / p99 ms"
        " | sign-in p50 / p99 ms | sold / places | refused | 5xx |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for db in databases:
        row = stampede[db]
        lines.append(
            f"| {db} | {row['processes']} | {row['registrations_per_second']}"
            f" | {row['registration_p50_ms']} / {row['registration_p99_ms']}"
            f" | {row['sign_in_p50_ms']} / {row['sign_in_p99_ms']}"
            f" | {row['places_sold']:,} / {row['capacity']:,} | {row['refused_sold_out']:,}"
            f" | {row['server_errors']} |"
        )
    return lines


def _webhooks(webhooks: dict[str, Any]) -> list[str]:
    databases = [name for name in ("sqlite", "postgresql") if name in webhooks]
    lines = [
        f"Webhooks: {webhooks['events']:,} events to a fast local receiver; a user update with"
        " and without an endpoint subscribed.",
        "",
        "| database | processes | events/s | update without / with an endpoint, ms | ratio |",
        "|---|---|---|---|---|",
    ]
    for db in databases:
        cost = webhooks[db]["write_cost"]
        for delivery in webhooks[db]["delivery"]:
            lines.append(
                f"| {db} | {delivery['processes']} | {delivery['events_per_second']}"
                f" | {cost['without_endpoint_ms']} / {cost['with_endpoint_ms']}"
                f" | {cost['ratio']} |"
            )
    return lines
