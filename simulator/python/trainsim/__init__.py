"""trainsim from Python: the CLI's perf, search, batch and validate as functions.

Every call runs the same C++ code as the ``trainsim`` command (the extension links the CLI's
library), so ``perf(...).to_dict()`` is the document ``trainsim perf --json`` prints for the same
inputs, and errors carry the CLI's messages. Models, strategies and systems are preset names, file
paths or dicts; a Hugging Face config is a dict or a path; a Megatron-LM command line is a string
(or a path, as a ``pathlib.Path``). The GIL is released while an estimate runs: calls from several
threads run in parallel.

    >>> import trainsim
    >>> r = trainsim.perf(model="llama3-8b", strategy="tp2-pp2-dp2-zero1", system="h100-sxm-80g")
    >>> round(r.iteration_time_s, 3) > 0
    True
"""

from __future__ import annotations

import csv as _csv
import io as _io
import json as _json
import os as _os
import warnings as _warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from . import _trainsim
from ._trainsim import Error, InputError, UsageError

__all__ = [
    "Error", "InputError", "UsageError", "PerfResult", "SearchResult", "BatchResult",
    "perf", "search", "batch", "validate",
]

PathLike = Union[str, "_os.PathLike[str]"]
Document = Union[str, "_os.PathLike[str]", Mapping[str, Any]]

_NONE = ("", "", "")

# What the extension sets on the errors it raises; these defaults serve the ones raised here.
for _cls in (Error, InputError, UsageError):
    _cls.issues = ()
    _cls.source = None
    _cls.path = None
    _cls.suggestion = None


def _usage_error(message: str, suggestion: Optional[str] = None) -> UsageError:
    e = UsageError(message)
    e.suggestion = suggestion
    return e


def _input(kind: str, value: Optional[Document]) -> tuple:
    """(name or path, document text, document label) for the extension."""
    if value is None:
        return _NONE
    if isinstance(value, Mapping):
        return ("", _json.dumps(value), f"{kind} (dict)")
    if isinstance(value, (str, _os.PathLike)):
        return (_os.fspath(value), "", "")
    raise _usage_error(f"{kind}: expected a preset name, a file path or a dict, got {type(value).__name__}")


def _hf_input(value: Optional[Document]) -> tuple:
    if value is None or isinstance(value, Mapping):
        return _input("hf_config", value)
    if isinstance(value, (str, _os.PathLike)):
        return (_os.fspath(value), "", "")
    raise _usage_error(f"hf_config: expected a config.json dict or path, got {type(value).__name__}")


def _megatron_input(value: Optional[Union[str, "_os.PathLike[str]"]]) -> tuple:
    """A command line as a string; a pathlib.Path names a file holding one (as --megatron-args)."""
    if value is None:
        return _NONE
    if isinstance(value, str):
        return ("", value, "megatron_args (string)")
    if isinstance(value, _os.PathLike):
        return (_os.fspath(value), "", "")
    raise _usage_error(f"megatron_args: expected the command line as a string, got {type(value).__name__}")


def _set_text(key: str, value: Any) -> str:
    """One --set KEY=VALUE: strings as typed, other values as JSON (2, true, [1, 2])."""
    return f"{key}={value if isinstance(value, str) else _json.dumps(value)}"


def _plan(model, strategy, hf_config, megatron_args, set) -> dict:
    sets = [] if set is None else [_set_text(k, v) for k, v in dict(set).items()]
    return {
        "model": _input("model", model),
        "strategy": _input("strategy", strategy),
        "hf_config": _hf_input(hf_config),
        "megatron_args": _megatron_input(megatron_args),
        "set": sets,
    }


def _compat(compat: Optional[str]) -> str:
    return "" if compat is None else str(compat)


class PerfResult:
    """One prediction. ``to_dict()`` is the ``trainsim perf --json`` document."""

    __slots__ = ("_p", "_doc")

    def __init__(self, prediction):
        self._p = prediction
        self._doc = None

    @property
    def iteration_time_s(self) -> float:
        return self._p.iteration_time_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self._p.tokens_per_s_per_gpu

    @property
    def peak_reserved_gib(self) -> float:
        return self._p.peak_reserved_bytes / 2**30

    @property
    def fits(self) -> Optional[bool]:
        """The fit verdict: True for FITS and TIGHT (None when the system gives no device memory)."""
        return self._p.fits

    @property
    def fit_state(self) -> Optional[str]:
        """"FITS", "TIGHT" (fits only once PyTorch's caching allocator frees its cached blocks) or
        "DOES NOT FIT", as ``perf --json``'s ``fit_state`` (None without device memory)."""
        return self._p.fit_state

    def to_json(self) -> str:
        """The exact text of ``trainsim perf --json``."""
        return self._p.json()

    def to_dict(self) -> Dict[str, Any]:
        if self._doc is None:
            self._doc = _json.loads(self._p.json())
        return _json.loads(_json.dumps(self._doc))  # a copy the caller may change

    def summary(self) -> str:
        """The text ``trainsim perf`` prints."""
        return self._p.summary()

    def __getitem__(self, key: str) -> Any:
        if self._doc is None:
            self._doc = _json.loads(self._p.json())
        return self._doc[key]

    @property
    def mfu(self) -> float:
        return self["mfu"]

    @property
    def stages(self) -> List[Dict[str, Any]]:
        """The reported pipeline stages: memory, peak and fit of each (the document's ``stages``)."""
        return self.to_dict()["stages"]

    @property
    def time_breakdown(self) -> List[Dict[str, Any]]:
        """Where the time of the first, middle and last stage goes (the document's
        ``time_breakdown``)."""
        return self.to_dict()["time_breakdown"]

    def breakdown(self, level: str = "op") -> List[Dict[str, Any]]:
        """Time per stage by op (``level="op"``) or by layer type (``"layer"``): the rows of the
        document's ``breakdown.time_per_stage``, each with its ``pp_rank``."""
        key = {"op": "by_op", "layer": "by_layer_type"}.get(level)
        if key is None:
            # The CLI's message for --breakdown.
            self._p.breakdown_table(level)
        rows = []
        for stage in self["breakdown"]["time_per_stage"]:
            for r in stage[key]:
                rows.append({"pp_rank": stage["pp_rank"], **r})
        return rows

    def __repr__(self) -> str:
        return (f"<trainsim.PerfResult {self['parallelism']}: {self.iteration_time_s * 1e3:.1f} ms/step, "
                f"MFU {self.mfu:.3f}, peak {self['peak_reserved_gib']:.1f} GiB>")


def _warn(command: str, notes: Iterable[str], not_modeled: Iterable[str]) -> None:
    for n in notes:
        _warnings.warn(f"trainsim {command}: note: {n}", stacklevel=3)
    nm = list(not_modeled)
    if nm:
        _warnings.warn(f"trainsim {command}: warning: given but not modeled: {', '.join(nm)}", stacklevel=3)


def perf(model: Optional[Document] = None, strategy: Optional[Document] = None,
         system: Optional[Document] = None, hf_config: Optional[Document] = None,
         megatron_args: Optional[Union[str, "_os.PathLike[str]"]] = None,
         set: Optional[Mapping[str, Any]] = None, compat: Optional[str] = None,
         mfu: str = "megatron") -> PerfResult:
    """Predicts one plan, as ``trainsim perf``: without model and strategy the default plan
    (llama3-8b, tp2-pp2-dp2-zero1 on h100-sxm-80g). ``set`` overrides model or strategy keys
    (``--set``), ``compat="simumax-1.2"`` reproduces SimuMax v1.2, ``mfu`` picks the headline
    convention (megatron or simumax)."""
    plan = _plan(model, strategy, hf_config, megatron_args, set)
    return PerfResult(_trainsim.perf(plan, _input("system", system), mfu, _compat(compat)))


def _list_text(value: Any) -> str:
    """A search option as its CLI text: 4 → "4", [1, 2, 4] → "1,2,4", True → "on"."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple, range)):
        return ",".join(_list_text(v) for v in value)
    return str(value)


# Keyword → the CLI option it stands for.
_SEARCH_OPTIONS = {
    "gpus": "gpus", "global_batch": "global-batch", "gbs": "global-batch", "seq": "seq", "top": "top",
    "rank_by": "rank-by", "mfu": "mfu", "threads": "threads", "gmi_error": "gmi-error", "tp": "tp", "pp": "pp",
    "cp": "cp", "ep": "ep", "etp": "etp", "vpp": "vpp", "mbs": "mbs", "zero": "zero",
    "recompute": "recompute", "sp": "sp",
}


class SearchResult:
    """Ranked candidates of ``search``: ``records()`` (the ``--json`` report's candidates),
    ``to_csv()`` (the ``--csv`` file), ``to_pandas()`` (that CSV as a DataFrame)."""

    def __init__(self, raw):
        self._raw = raw
        self.report: Dict[str, Any] = _json.loads(raw["json"])

    def __len__(self) -> int:
        return len(self.report["candidates"])

    def __iter__(self):
        return iter(self.records())

    def __getitem__(self, i: int) -> Dict[str, Any]:
        return self.records()[i]

    def records(self) -> List[Dict[str, Any]]:
        return self.report["candidates"]

    def to_csv(self) -> str:
        return self._raw["csv"]

    def rows(self) -> List[Dict[str, Any]]:
        """The CSV rows as records (numbers as numbers): what ``to_pandas`` holds."""
        out = []
        for row in _csv.DictReader(_io.StringIO(self.to_csv())):
            out.append({k: _number(v) for k, v in row.items()})
        return out

    def to_pandas(self):
        """The ranked candidates as a pandas DataFrame (the CSV's columns); without pandas,
        the same rows as records."""
        try:
            import pandas
        except ImportError:
            return self.rows()
        return pandas.read_csv(_io.StringIO(self.to_csv()))

    def table(self) -> str:
        """The ranked table ``trainsim search`` prints."""
        return self._raw["table"]

    def summary(self) -> str:
        return self._raw["summary"]

    def __repr__(self) -> str:
        return f"<trainsim.SearchResult {len(self)} candidates of {self.report['evaluated']} evaluated>"


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def search(model: Optional[Document] = None, system: Optional[Document] = None, *,
           strategy: Optional[Document] = None, hf_config: Optional[Document] = None,
           megatron_args: Optional[Union[str, "_os.PathLike[str]"]] = None,
           set: Optional[Mapping[str, Any]] = None, compat: Optional[str] = None,
           use_alloc: bool = False, **options: Any) -> SearchResult:
    """Ranks strategies for a model, as ``trainsim search``. Options are the CLI's, with ``_``
    for ``-``: gpus, global_batch (or gbs), seq, top, rank_by, mfu, threads, gmi_error and the candidate
    lists tp, pp, cp, ep, etp, vpp, mbs, zero, recompute, sp (a value, a list or a CLI text such
    as "1-8"). ``strategy`` is the base strategy."""
    given = {}
    for k, v in options.items():
        if k not in _SEARCH_OPTIONS:
            import difflib
            close = difflib.get_close_matches(k, list(_SEARCH_OPTIONS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise _usage_error(f"search: unknown option '{k}'{hint}", close[0] if close else None)
        if v is not None:
            given[_SEARCH_OPTIONS[k]] = _list_text(v)
    plan = _plan(model, strategy, hf_config, megatron_args, set)
    sys = _input("system", system) if system is not None else _NONE
    raw = _trainsim.search(plan, sys, given, use_alloc, _compat(compat))
    _warn("search", raw["notes"], raw["not_modeled"])
    return SearchResult(raw)


class BatchResult(list):
    """The rows of ``trainsim batch``'s CSV as records (``csv`` holds the text)."""

    csv: str = ""
    failed: int = 0

    def to_pandas(self):
        try:
            import pandas
        except ImportError:
            return list(self)
        return pandas.read_csv(_io.StringIO(self.csv))


def batch(dir: PathLike, system: Document, *, match: str = "", keep_going: bool = False,
          compat: Optional[str] = None) -> BatchResult:
    """Every case of a directory (``DIR/<case>/{model,strategy}.json`` or
    ``megatron_args.txt``), as ``trainsim batch``: one record per case, with its ``error`` when it
    failed (the batch stops at the first failure unless ``keep_going``)."""
    raw = _trainsim.batch(_os.fspath(dir), _input("system", system), match, keep_going, _compat(compat))
    out = BatchResult({k: (_number(v) if k not in ("case", "error") else v) for k, v in row.items()}
                      for row in _csv.DictReader(_io.StringIO(raw["csv"])))
    out.csv = raw["csv"]
    out.failed = raw["failed"]
    return out


def validate(dir: PathLike = "validation", *, tables: Optional[Iterable[str]] = None,
             systems: Optional[Mapping[str, str]] = None, compat: Optional[str] = None) -> Dict[str, Any]:
    """The accuracy tables of a folder, as ``trainsim validate --json``: the report as a dict."""
    swaps = [f"{k}={v}" for k, v in (systems or {}).items()]
    raw = _trainsim.validate(_os.fspath(dir), list(tables or []), swaps, _compat(compat))
    return _json.loads(raw)
