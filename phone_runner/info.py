"""What a phone is (Table 6) and what state it is in (D.2.3-D.2.4), read over adb.

``device_info`` reads ``getprop`` (model, SoC, ABI, Android release and API level) and sysfs:
cores and clusters (``related_cpus``), min/max/current frequencies and governors, online cores,
thermal zones and the battery. ``sample`` is the cheap subset the 1 Hz monitor reads.
Every read is ``cat <fixed sysfs path>`` as an argv list; nothing from a config reaches a shell.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

import adbutils

CPU = "/sys/devices/system/cpu"
THERMAL = "/sys/class/thermal"
BATTERY = "/sys/class/power_supply/battery"


def parse_cpulist(text: str) -> list[int]:
    """Kernel cpulist (``0-3,5,7-8``) -> sorted core ids."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return sorted(out)


def read(dev: adbutils.AdbDevice, path: str) -> str | None:
    """A sysfs/proc value, or ``None`` if the phone does not have it."""
    r = dev.shell2(["cat", path], timeout=20)
    return r.output.strip() if r.returncode == 0 else None


def read_many(dev: adbutils.AdbDevice, paths: list[str]) -> dict[str, str]:
    """Many one-line sysfs values in one adb round trip: ``grep -H . FILE...`` prints
    ``FILE:value`` per file (toybox grep on Android); missing files are simply absent."""
    if not paths:
        return {}
    r = dev.shell2(["grep", "-H", ".", *paths], timeout=30)
    out: dict[str, str] = {}
    for ln in r.stdout.splitlines() if r.stdout else r.output.splitlines():
        for p in paths:
            if ln.startswith(p + ":"):
                out.setdefault(p, ln[len(p) + 1 :].strip())
                break
    return out


def _as_int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def getprops(dev: adbutils.AdbDevice) -> dict[str, str]:
    text = dev.shell(["getprop"], timeout=20)
    return dict(re.findall(r"^\[([^\]]+)\]: \[([^\]]*)\]", text, flags=re.M))


def hashed_serial(serial: str) -> str:
    """Serials identify a person's phone: profiles and runs carry only a hash."""
    return hashlib.sha256(serial.encode()).hexdigest()[:12]


def zones(dev: adbutils.AdbDevice) -> list[tuple[int, str]]:
    listing = dev.shell2(["ls", THERMAL], timeout=20)
    ids = sorted(int(m) for m in re.findall(r"thermal_zone(\d+)", listing.stdout or listing.output))
    types = read_many(dev, [f"{THERMAL}/thermal_zone{i}/type" for i in ids])
    return [(i, types[f"{THERMAL}/thermal_zone{i}/type"]) for i in ids if f"{THERMAL}/thermal_zone{i}/type" in types]


CORE_FILES = ("cpuinfo_min_freq", "cpuinfo_max_freq", "scaling_max_freq", "scaling_cur_freq", "scaling_governor",
              "related_cpus")
BATTERY_FILES = ("capacity", "temp", "current_now", "voltage_now", "status")


def device_info(dev: adbutils.AdbDevice) -> dict[str, Any]:
    p = getprops(dev)
    top = read_many(dev, [f"{CPU}/possible", f"{CPU}/online"])
    cores = parse_cpulist(top.get(f"{CPU}/possible", "0"))
    online = parse_cpulist(top.get(f"{CPU}/online", ""))
    zs = zones(dev)
    v = read_many(dev, [f"{CPU}/cpu{c}/cpufreq/{n}" for c in cores for n in CORE_FILES]
                  + [f"{THERMAL}/thermal_zone{i}/temp" for i, _ in zs] + [f"{BATTERY}/{n}" for n in BATTERY_FILES])
    clusters: dict[str, dict[str, Any]] = {}
    per_core = []
    for c in cores:
        f = f"{CPU}/cpu{c}/cpufreq"
        core = {"core": c, "online": c in online, "min_khz": _as_int(v.get(f"{f}/cpuinfo_min_freq")),
                "max_khz": _as_int(v.get(f"{f}/cpuinfo_max_freq")),
                "ceiling_khz": _as_int(v.get(f"{f}/scaling_max_freq")),
                "cur_khz": _as_int(v.get(f"{f}/scaling_cur_freq")), "governor": v.get(f"{f}/scaling_governor")}
        per_core.append(core)
        related = v.get(f"{f}/related_cpus") or str(c)
        key = " ".join(related.split())
        cl = clusters.setdefault(key, {"cores": [int(x) for x in key.split()], "min_khz": core["min_khz"],
                                       "max_khz": core["max_khz"], "governor": core["governor"]})
        cl["max_khz"] = max(cl["max_khz"] or 0, core["max_khz"] or 0) or None
    therm = [{"zone": i, "type": t, "temp_c": _milli(v.get(f"{THERMAL}/thermal_zone{i}/temp"))} for i, t in zs]
    return {
        "model": p.get("ro.product.model", ""), "manufacturer": p.get("ro.product.manufacturer", ""),
        "soc": p.get("ro.soc.model") or p.get("ro.board.platform") or p.get("ro.hardware", ""),
        "soc_manufacturer": p.get("ro.soc.manufacturer", ""), "abi": p.get("ro.product.cpu.abi", ""),
        "android": p.get("ro.build.version.release", ""), "api": int(p.get("ro.build.version.sdk", "0") or 0),
        "serial_hash": hashed_serial(p.get("ro.serialno") or dev.serial),
        "cores": len(cores), "online": online, "clusters": sorted(clusters.values(), key=lambda c: c["cores"][0]),
        "per_core": per_core, "thermal": therm, "battery": battery(v),
    }


def _milli(v: str | None) -> float | None:
    try:
        return int(v) / 1000.0 if v is not None else None
    except ValueError:
        return None


def battery(v: dict[str, str]) -> dict[str, Any]:
    """Battery fields from values read with :func:`read_many` (``BATTERY_FILES``)."""
    def num(name: str, scale: float) -> float | None:
        x = _as_int(v.get(f"{BATTERY}/{name}"))
        return None if x is None else x * scale

    return {"level": num("capacity", 1.0), "temp_c": num("temp", 0.1), "current_ma": num("current_now", 1e-3),
            "voltage_v": num("voltage_now", 1e-6), "status": v.get(f"{BATTERY}/status")}


def sample(dev: adbutils.AdbDevice, cores: list[int], zone_ids: list[int]) -> dict[str, Any]:
    """One monitor sample (one adb round trip): online cores, per-core ceiling and current
    frequency, temperatures, battery current and voltage."""
    t = time.time()
    v = read_many(dev, [f"{CPU}/online"]
                  + [f"{CPU}/cpu{c}/cpufreq/{n}" for c in cores for n in ("scaling_max_freq", "scaling_cur_freq")]
                  + [f"{THERMAL}/thermal_zone{z}/temp" for z in zone_ids] + [f"{BATTERY}/{n}" for n in BATTERY_FILES])
    row: dict[str, Any] = {"t_unix": t, "online": v.get(f"{CPU}/online", "")}
    for c in cores:
        f = f"{CPU}/cpu{c}/cpufreq"
        row[f"cpu{c}_ceiling_khz"] = _as_int(v.get(f"{f}/scaling_max_freq"))
        row[f"cpu{c}_cur_khz"] = _as_int(v.get(f"{f}/scaling_cur_freq"))
    for z in zone_ids:
        row[f"zone{z}_temp_c"] = _milli(v.get(f"{THERMAL}/thermal_zone{z}/temp"))
    b = battery(v)
    row["battery_current_ma"], row["battery_voltage_v"], row["battery_temp_c"] = (
        b["current_ma"], b["voltage_v"], b["temp_c"])
    return row


def table6_row(info: dict[str, Any]) -> dict[str, Any]:
    """Table 6's columns: device, SoC, Android, CPU clusters (cores @ max GHz)."""
    cl = " + ".join(f"{len(c['cores'])}x{(c['max_khz'] or 0) / 1e6:.2f}GHz" for c in info["clusters"])
    return {"device": info["model"], "soc": info["soc"], "android": f"{info['android']} (API {info['api']})",
            "abi": info["abi"], "cpu": cl, "cores": info["cores"], "serial_hash": info["serial_hash"]}
