"""Read experiment-tracker logs back with each tool's own reader (for the --logger tests).

- TensorBoard: ``EventAccumulator`` (tensorboard's own).
- CSV: TorchRL's CSVLogger files (``scalars/<tag>.csv`` of ``step,value`` lines, ``videos/``, ``texts/``).
- W&B: an offline run's ``run-*.wandb`` file, a LevelDB-style log of ``wandb_internal_pb2.Record``
  protobufs (W&B's own message classes); wandb 0.31's Go core ships no Python reader of it.
"""

from __future__ import annotations

import json
from pathlib import Path


def tensorboard_scalars(folder: Path) -> tuple[dict[str, list[tuple[int, float]]], list[str]]:
    """``({tag: [(step, value)]}, video tags)`` of the events files in ``folder``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    return ({t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags["scalars"]},
            [(t, [i.step for i in acc.Images(t)]) for t in tags["images"]])


def csv_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    out = {}
    for path in sorted((folder / "scalars").rglob("*.csv")):
        rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
        out[path.relative_to(folder / "scalars").with_suffix("").as_posix()] = [(int(s), float(v)) for s, v in rows]
    return out


def wandb_records(path: Path) -> list[tuple[str, object]]:
    """``(record type, message)`` of every record in an offline run file."""
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", "not a W&B run file"
    block, pos, pending, records = 32768, 7, b"", []
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        if length == 0 and kind == 0:
            pos += left
            continue
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append((record.WhichOneof("record_type"), record))
            pending = b""
    return records


def wandb_history(path: Path) -> list[dict[str, object]]:
    """The logged rows (history records) of an offline run, their values decoded from JSON."""
    rows = []
    for kind, record in wandb_records(path):
        if kind == "history":
            rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                         for item in record.history.item})
    return rows


def wandb_config(path: Path) -> dict[str, object]:
    config = {}
    for kind, record in wandb_records(path):
        if kind == "config":
            config.update({u.key: json.loads(u.value_json) for u in record.config.update})
    return config


def mlflow_run(folder: Path, experiment: str) -> dict[str, object]:
    """The one run of ``experiment`` in the local MLflow store of ``folder`` (``mlflow.db``), read with
    MLflow's own client: ``{"name", "metrics": {key: [(step, value)]}, "params", "artifacts"}``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{Path(folder).resolve() / 'mlflow.db'}")
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no MLflow experiment {experiment!r} in {folder}"
    [run] = client.search_runs([found.experiment_id])
    run_id = run.info.run_id
    metrics = {key: sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))
               for key in run.data.metrics}
    artifacts = [a.path for top in client.list_artifacts(run_id) for a in
                 (client.list_artifacts(run_id, top.path) if top.is_dir else [top])]
    return {"name": run.info.run_name, "metrics": metrics, "params": run.data.params, "artifacts": artifacts,
            "artifact_uri": run.info.artifact_uri}
