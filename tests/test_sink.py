"""The sink talks to whatever watches a run through one protocol (``sink.Observer``), on a real run."""

from __future__ import annotations

import pytest

import torchrl_render.api.run as api
from torchrl_render import RenderConfig, render_policy
from torchrl_render.sink import Observer


class Recorder:
    """An observer that writes down every call; ``stop_after`` episodes, it ends the run."""

    def __init__(self, current_frames: bool, stop_after: int | None = None) -> None:
        self.current_frames, self.stop_after, self.calls = current_frames, stop_after, []

    def on_step(self, record, metrics):
        self.calls.append(("step", record.trajectory, record.step, metrics["return"]))

    def on_frame(self, frame, record, metrics):
        self.calls.append(("frame", record.trajectory, record.step, frame.shape))

    def on_episode(self, episodes):
        self.calls.append(("episode", len(episodes)))

    def stopped_because(self, finished):
        return f"stopped after {finished}" if self.stop_after is not None and finished >= self.stop_after else None

    def close(self, finished=True):
        self.calls.append(("close", finished))
        return None


def test_the_live_page_and_the_viewer_are_observers():
    from torchrl_render.live import LiveFeed, Viewer

    for cls in (LiveFeed, Viewer):  # what the sink calls, and whether it finishes the step's frame first
        assert all(callable(getattr(cls, name, None)) for name in
                   ("on_step", "on_frame", "on_episode", "stopped_because", "close")), cls
        assert isinstance(getattr(cls, "current_frames", None), bool), cls
    assert (LiveFeed.current_frames, Viewer.current_frames) == (False, True)  # the window shows the step's frame
    assert isinstance(Recorder(current_frames=False), Observer)


def _run(tmp_path, monkeypatch, *watchers, **kw):
    monkeypatch.setattr(api, "observers", lambda cfg, makes_frames: list(watchers))
    return render_policy(RenderConfig(policy="helpers.tinyenv:make_policy", env="helpers.tinyenv:make_env",
                                      env_kwargs={"pixels": True}, from_pixels=True, num_trajs=3, max_steps=4,
                                      out=tmp_path / "run.mp4", **kw))


def test_every_observer_sees_each_step_frame_and_episode_once_then_close(tmp_path, monkeypatch):
    early, late = Recorder(current_frames=False), Recorder(current_frames=True)
    result = _run(tmp_path, monkeypatch, early, late)
    lengths = [e["length"] for e in result.metrics["per_episode"]]
    for watcher in (early, late):
        kinds = [c[0] for c in watcher.calls]
        assert kinds.count("step") == kinds.count("frame") == sum(n + 1 for n in lengths)  # the reset's step too
        assert [c for c in watcher.calls if c[0] == "episode"] == [("episode", i + 1) for i in range(3)]
        assert watcher.calls[-1] == ("close", True)
        returns = [c[3] for c in watcher.calls if c[0] == "step" and c[1] == 0]
        assert returns[-1] == pytest.approx(result.metrics["per_episode"][0]["sum_reward"])
    # the early observer sees a step before its frame is drawn, the late one after
    assert early.calls[:2] == [("step", 0, 0, early.calls[0][3]), ("frame", 0, 0, early.calls[1][3])]
    assert late.calls[0][0] == "frame" and late.calls[1][:3] == ("step", 0, 0)


def test_an_observer_that_ends_the_run_keeps_the_finished_episodes_and_says_why(tmp_path, monkeypatch):
    watcher = Recorder(current_frames=True, stop_after=1)
    result = _run(tmp_path, monkeypatch, watcher)
    assert len(result.metrics["per_episode"]) == 1
    assert "stopped after 1" in result.warnings
    assert watcher.calls[-1] == ("close", True)
