"""Helpers for the live tests: slow policies (so a run lasts long enough to be watched) and a run in a thread."""

from __future__ import annotations

import logging
import re
import threading
import time
from contextlib import contextmanager

import torch

from helpers import policies as zoo


class _Slow(torch.nn.Module):
    def __init__(self, net, delay):
        super().__init__()
        self.net, self.delay = net, delay

    def forward(self, obs):
        time.sleep(self.delay)
        return self.net(obs)


def slow_linear_policy(spec):
    """helpers.policies.linear_policy, 4 ms a call: a HalfCheetah step then takes a few ms, as a real policy's does."""
    return _Slow(zoo.linear_policy(spec), 0.004)


def slow_tiny_policy(spec):
    """tinyenv's policy, 4 ms a call."""
    from helpers import tinyenv

    return _Slow(tinyenv.make_policy(spec), 0.004)


class _Catch(logging.Handler):
    def __init__(self):
        super().__init__()
        self.urls, self.messages = [], []

    def emit(self, record):
        text = record.getMessage()
        self.messages.append(text)
        self.urls += re.findall(r"http://\S+", text)


@contextmanager
def run_in_thread(cfg):
    """Starts render_policy(cfg) on a thread; yields (url of the live page, box with result/error, thread)."""
    from torchrl_render import render_policy

    catch = _Catch()
    logger = logging.getLogger("torchrl_render")
    logger.addHandler(catch)
    box = {}

    def target():
        try:
            box["result"] = render_policy(cfg)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not catch.urls and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert catch.urls, f"no live URL was logged: {catch.messages} {box}"
        yield catch.urls[0], box, thread
    finally:
        thread.join(120)
        logger.removeHandler(catch)
