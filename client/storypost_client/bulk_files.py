"""The files of a bulk run: rows from CSV or JSON, the results file (CSV or JSON)."""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from storypost_client.bulk_run import RowResult

# The results file's columns, in this order (JSON uses the same keys).
RESULT_COLUMNS = ("row", "uuid", "status", "date", "previewUrl", "editorUrl", "warnings", "error")
FORMATS = (".csv", ".json")


class DataFileError(ValueError):
    """A data file that cannot be read as rows."""


def file_format(path: str | Path, what: str) -> str:
    """`.csv` or `.json`, from the file's name."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{what} {path}: the name must end in .csv or .json")
    return suffix


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a CSV file (a header line, then one row a line) or a JSON file (an array of
    objects). A CSV row with fewer fields than the header has None in the missing columns."""
    kind = file_format(path, "data file")
    if kind == ".json":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise DataFileError(f"{path}: not JSON ({error})") from None
        if not isinstance(data, list):
            raise DataFileError(f"{path}: expected a JSON array of objects, one per row")
        return data
    # utf-8-sig: a spreadsheet's export often starts with a byte order mark.
    with Path(path).open(encoding="utf-8-sig", newline="") as file:
        reader = csv.DictReader(file)
        header = reader.fieldnames or []
        duplicated = sorted({name for name in header if header.count(name) > 1})
        if duplicated:
            raise DataFileError(f"{path}: the header repeats {', '.join(duplicated)}")
        try:
            return [dict(row) for row in reader]
        except csv.Error as error:
            raise DataFileError(f"{path}, line {reader.line_num}: {error}") from None


def result_record(result: RowResult) -> dict[str, Any]:
    """A result as the results file writes it (the API's camelCase names)."""
    return {
        "row": result.row,
        "uuid": result.uuid,
        "status": result.status,
        "date": result.date,
        "previewUrl": result.preview_url,
        "editorUrl": result.editor_url,
        "warnings": list(result.warnings),
        "error": result.error,
    }


def write_results(path: str | Path, results: Iterable[RowResult]) -> None:
    """Writes the results file, CSV or JSON by its name, atomically (a run that stops midway
    leaves the earlier file whole)."""
    kind = file_format(path, "results file")
    records = [result_record(result) for result in results]
    target = Path(path)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline="", dir=target.parent, delete=False, suffix=kind
    ) as file:
        if kind == ".json":
            json.dump(records, file, indent=2, ensure_ascii=False)
            file.write("\n")
        else:
            writer = csv.DictWriter(file, fieldnames=RESULT_COLUMNS)
            writer.writeheader()
            for record in records:
                writer.writerow({**record, "warnings": "; ".join(record["warnings"])})
    Path(file.name).replace(target)


def read_results(path: str | Path) -> list[RowResult]:
    """An earlier results file (none yet: no results). Rows it lists as done are not sent
    again by a run that is given them as `previous`."""
    kind = file_format(path, "results file")
    target = Path(path)
    if not target.exists():
        return []
    if kind == ".json":
        try:
            records = json.loads(target.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise DataFileError(f"{path}: not JSON ({error})") from None
        if not isinstance(records, list):
            raise DataFileError(f"{path}: not a results file (a JSON array)")
    else:
        with target.open(encoding="utf-8", newline="") as file:
            records = list(csv.DictReader(file))
    return [_result_of(record) for record in records if isinstance(record, Mapping)]


def _result_of(record: Mapping[str, Any]) -> RowResult:
    warnings = record.get("warnings") or ()
    if isinstance(warnings, str):
        warnings = [part for part in warnings.split("; ") if part]
    try:
        row = int(record.get("row") or 0)
    except ValueError:
        row = 0
    return RowResult(
        row=row,
        status=str(record.get("status") or ""),
        uuid=record.get("uuid") or None,
        date=record.get("date") or None,
        preview_url=record.get("previewUrl") or None,
        editor_url=record.get("editorUrl") or None,
        warnings=tuple(str(item) for item in warnings),
        error=record.get("error") or None,
    )
