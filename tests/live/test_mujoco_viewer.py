"""torchrl.render's live viewer functions (``torchrl_render.mujoco_wasm``) driving a real page in Chromium.

The viewer folder is written from gymnasium's HalfCheetah model file; the page is the live page
served by our server; the states sent are checked against ``mj_kinematics`` run here on a model
loaded from the same XML (an independent computation), read back from the page's 3-D view.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import gymnasium.envs.mujoco as gymnasium_mujoco
import mujoco
import numpy as np
import pytest

from torchrl_render import (
    display_mujoco_wasm_viewer,
    play_mujoco_wasm_trajectory,
    send_mujoco_wasm_qpos,
    write_mujoco_wasm_viewer,
)
from torchrl_render.errors import ConfigError, ViewerError, ViewerTimeout

from helpers.browser import browser, needs_browser

CHEETAH = Path(gymnasium_mujoco.__file__).parent / "assets" / "half_cheetah.xml"


def _xpos(qpos):
    """Body positions for ``qpos``, computed here from the XML (not by the package)."""
    model = mujoco.MjModel.from_xml_path(str(CHEETAH))
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    return data.xpos.copy()


def _open(context, url):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_function("() => window.live !== undefined", timeout=20000)
    page.evaluate("window.live.ready.then(() => true)")
    page.wait_for_function("() => window.live.state().mode === '3d'", timeout=20000)
    return page, errors


@pytest.fixture(scope="module")
def viewer_dir(tmp_path_factory):
    return write_mujoco_wasm_viewer(tmp_path_factory.mktemp("viewer") / "cheetah", CHEETAH)


def test_viewer_folder_holds_the_compiled_model_and_its_scene(viewer_dir):
    manifest = json.loads((viewer_dir / "manifest.json").read_text())
    model = mujoco.MjModel.from_binary_path(str(viewer_dir / manifest["model"]))
    reference = mujoco.MjModel.from_xml_path(str(CHEETAH))
    assert (model.nq, model.nbody, model.ngeom) == (reference.nq, reference.nbody, reference.ngeom) == \
        (manifest["nq"], manifest["nbody"], reference.ngeom)
    scene = json.loads((viewer_dir / "scene.json").read_text())
    assert [b["name"] for b in scene["bodies"]] == [reference.body(i).name for i in range(reference.nbody)]
    assert not (viewer_dir / "package.json").exists()  # no npm project: nothing to install


@needs_browser
@pytest.mark.slow
def test_send_qpos_drives_the_page_to_the_state(viewer_dir):
    rng = np.random.default_rng(0)
    with display_mujoco_wasm_viewer(viewer_dir, port=0) as viewer, browser() as context:
        page, errors = _open(context, viewer.url)
        # the opening view is MuJoCo's tracking camera at the posed state (the first state shown: qpos0)
        page.wait_for_function("() => live.state().applied > 0", timeout=20000)
        model = mujoco.MjModel.from_xml_path(str(CHEETAH))
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        assert model.ncam == 1 and model.cam_mode[0] != mujoco.mjtCamLight.mjCAMLIGHT_FIXED
        np.testing.assert_allclose(page.evaluate("live.camera().position"), data.cam_xpos[0], atol=1e-4)
        for _ in range(2):
            qpos = rng.uniform(-0.6, 0.6, size=9)
            ack = send_mujoco_wasm_qpos(qpos, port=viewer.port, wait=True, timeout=20)
            assert ack["ok"] and ack["type"] == "torchrl:mujoco_wasm:qposApplied"
            shown = np.array(page.evaluate("live.bodyPositions()"))
            np.testing.assert_allclose(shown, _xpos(qpos), atol=1e-5)
        # by origin, in degrees: hinges are turned into radians, slides (rootx, rootz) are lengths
        joints = np.full(9, 10.0)
        send_mujoco_wasm_qpos(joints, viewer_origin=viewer.origin, degrees=True, wait=True, timeout=20)
        model = mujoco.MjModel.from_xml_path(str(CHEETAH))
        hinge = model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE.value
        expected = np.where(hinge[:9], np.deg2rad(joints), joints)  # one qpos entry a joint here
        assert hinge.sum() == 7
        np.testing.assert_allclose(np.array(page.evaluate("live.bodyPositions()")), _xpos(expected), atol=1e-4)
        assert errors == []


@needs_browser
@pytest.mark.slow
def test_play_trajectory_moves_through_the_waypoints_and_ends_on_the_last(viewer_dir):
    waypoints = [np.r_[0.0, 0.0, a, np.zeros(6)] for a in np.linspace(0.0, 1.0, 12)]
    with display_mujoco_wasm_viewer(viewer_dir, port=0) as viewer, browser() as context:
        page, errors = _open(context, viewer.url)
        before = page.evaluate("live.state().poses")
        done = play_mujoco_wasm_trajectory(waypoints, fps=30.0, port=viewer.port, wait=True, timeout=30)
        assert done["ok"] and done["type"] == "torchrl:mujoco_wasm:trajectoryComplete"
        assert done["seconds"] >= (len(waypoints) - 1) / 30.0 * 0.9  # real time, not as fast as possible
        assert page.evaluate("live.state().poses") - before >= len(waypoints) // 2  # many poses on the way
        np.testing.assert_allclose(np.array(page.evaluate("live.bodyPositions()")), _xpos(waypoints[-1]), atol=1e-5)
        # looping goes on in the background until another state is sent
        play_mujoco_wasm_trajectory(waypoints, dt=0.02, port=viewer.port, loop=True)
        seen = page.evaluate("live.state().poses")
        page.wait_for_function(f"() => live.state().poses > {seen} + 20", timeout=20000)
        send_mujoco_wasm_qpos(waypoints[0], port=viewer.port, wait=True, timeout=20)
        time.sleep(0.2)
        np.testing.assert_allclose(np.array(page.evaluate("live.bodyPositions()")), _xpos(waypoints[0]), atol=1e-5)
        assert errors == []


def test_display_falls_back_to_a_free_port_and_honours_the_port_asked(viewer_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with display_mujoco_wasm_viewer(viewer_dir, port=port) as viewer:
            assert viewer.port != port and viewer.torchrl_mujoco_wasm_port == viewer.port
            assert viewer.torchrl_mujoco_wasm_origin == f"http://127.0.0.1:{viewer.port}"
            assert viewer.poll() is None
        assert viewer.poll() == 0
    free = _free_port()
    with display_mujoco_wasm_viewer(viewer_dir, port=free) as viewer:
        assert viewer.port == free
        assert f'src="http://127.0.0.1:{free}/?token=' in viewer.iframe_html()


def test_viewer_messages_say_what_to_do(viewer_dir, tmp_path):
    with pytest.raises(ViewerError, match="no MuJoCo viewer of this process serves on port 1.*display_mujoco_wasm"):
        send_mujoco_wasm_qpos([0.0] * 9, port=1)
    with display_mujoco_wasm_viewer(viewer_dir, port=0) as viewer:
        with pytest.raises(ConfigError, match=r"does not fit.*9 values \(nq\) or 9.*Got: 4 values"):
            send_mujoco_wasm_qpos([0.0] * 4, port=viewer.port)
        with pytest.raises(ConfigError, match="all finite"):
            send_mujoco_wasm_qpos([float("nan")] * 9, port=viewer.port)
        with pytest.raises(ViewerTimeout, match=f"no page drew the pose.*ssh -L {viewer.port}"):
            send_mujoco_wasm_qpos([0.0] * 9, port=viewer.port, wait=True, timeout=0.2)
        for kwargs, message in [(dict(dt=0.1, fps=10), "either dt or fps"),
                                (dict(fps=0), "fps must be a positive number.*dt=0.05 or fps=20"),
                                (dict(wait=True, loop=True), "needs a trajectory that ends")]:
            with pytest.raises(ConfigError, match=message):
                play_mujoco_wasm_trajectory([[0.0] * 9], port=viewer.port, **kwargs)
        with pytest.raises(ConfigError, match="differ in length"):
            play_mujoco_wasm_trajectory([[0.0] * 9, [0.0] * 8], port=viewer.port)
    with pytest.raises(ConfigError, match="is not a viewer folder.*write_mujoco_wasm_viewer"):
        display_mujoco_wasm_viewer(tmp_path, port=0)
    with pytest.raises(ConfigError, match="does not exist"):
        write_mujoco_wasm_viewer(tmp_path / "v", tmp_path / "missing.xml")
    assert not (tmp_path / "v").exists()  # nothing half-written


def test_play_with_viewer_dir_starts_a_viewer_and_records_the_trajectory(viewer_dir):
    out = play_mujoco_wasm_trajectory([[0.0] * 9, [0.1] * 9], dt=0.05, port=0, viewer_dir=viewer_dir)
    try:
        saved = json.loads(Path(out["trajectory_path"]).read_text())
        assert saved["qpos"] == [[0.0] * 9, [0.1] * 9] and saved["dt"] == 0.05
        assert "?token=" in out["viewer_url"]
    finally:
        from torchrl_render.live.notebook_viewer import _VIEWERS

        for viewer in list(_VIEWERS.values()):
            viewer.terminate()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_browser
@pytest.mark.slow
def test_torchrl_renders_own_notebook_cells_run_on_ours_with_the_import_changed(tmp_path):
    """torchrl.render's generated MuJoCo-viewer cells, with ``torchrl.render.mujoco_wasm`` replaced by
    ``torchrl_render.mujoco_wasm``, run in a real kernel: the viewer shows in the cell, and its
    ``wait=True`` playback returns once Chromium (driven from here) drew the last waypoint."""

    from nbformat.v4 import new_code_cell, new_notebook
    from torchrl.render.notebook import _mujoco_wasm_cells

    from helpers.kernels import notebook_client

    write_mujoco_wasm_viewer(tmp_path / "viewer", CHEETAH)
    waypoints = [[0.0, 0.0, float(a)] + [0.3] * 6 for a in np.linspace(0.0, 0.8, 10)]
    port = _free_port()
    setup = ("from pathlib import Path\nimport torch\nfrom tensordict import TensorDict\n"
             f"asset_dir = Path({str(tmp_path)!r})\n"
             f"metadata = {{'mujoco_wasm': {{'viewer_dir': 'viewer', 'viewer_port': {port}, 'qpos_key': 'qpos'}}}}\n"
             "render_config = {'fps': 30.0, 'mujoco_qpos_key': 'qpos'}\n"
             f"rollouts = [TensorDict({{'qpos': torch.tensor({waypoints!r})}}, batch_size=[{len(waypoints)}])]\n")
    theirs = [c for c in _mujoco_wasm_cells() if c["cell_type"] == "code"]
    sources = ["".join(c["source"]).replace("torchrl.render.mujoco_wasm", "torchrl_render.mujoco_wasm")
               for c in theirs]
    assert "from torchrl_render.mujoco_wasm import" in sources[0] and "wait=True" in sources[1]
    nb = new_notebook(cells=[new_code_cell(setup)] + [new_code_cell(s) for s in sources],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    from nbclient.exceptions import CellTimeoutError

    for attempt in (1, 2):  # a kernel that loses a cell's outputs (torchrl_render.notebook.kernel) gets one replacement
        try:
            _drive_viewer_cells(notebook_client(nb, tmp_path), nb, port, waypoints)
            break
        except CellTimeoutError as exc:
            if "IOPub" not in str(exc) or attempt == 2:
                raise


def _drive_viewer_cells(client, nb, port, waypoints):
    """The kernel's cells on a thread of their own (nbclient's event loop there), Chromium on this one.

    Nesting nbclient calls inside playwright's sync API on one thread leaves jupyter_core a task-runner
    thread bound to that thread's name; a later notebook of the same test process then lost its outputs
    or hung (seen in full-suite runs). Kept apart, neither touches the other's event loop.
    """
    import re
    import threading
    from concurrent.futures import Future

    url, done, steps = Future(), Future(), [threading.Event() for _ in range(2)]  # page open; positions read

    def kernel_side():
        try:
            with client.setup_kernel():
                client.execute_cell(nb.cells[0], 0)
                client.execute_cell(nb.cells[1], 1)             # display_mujoco_wasm_viewer(viewer_dir, port=...)
                shown = [o["data"]["text/html"] for o in nb.cells[1].outputs if o["output_type"] == "display_data"]
                url.set_result(re.search(r'src="([^"]+)"', shown[0]).group(1).replace("&amp;", "&"))
                assert steps[0].wait(120)
                client.execute_cell(nb.cells[2], 2)             # play_mujoco_wasm_trajectory(..., wait=True)
                done.set_result([o for o in nb.cells[2].outputs if o["output_type"] == "error"])
                assert steps[1].wait(120)
                client.execute_cell(nb.cells[3], 3)
        except BaseException as exc:
            for future in (url, done):
                if not future.done():
                    future.set_exception(exc)
            raise

    thread = threading.Thread(target=kernel_side, daemon=True)
    thread.start()
    try:
        with browser() as context:
            address = url.result(timeout=240)
            assert address.startswith(f"http://127.0.0.1:{port}/?token=")  # the port asked (free here)
            page, errors = _open(context, address)
            steps[0].set()
            assert done.result(timeout=240) == []
            np.testing.assert_allclose(np.array(page.evaluate("live.bodyPositions()")), _xpos(waypoints[-1]),
                                       atol=1e-5)
            steps[1].set()
            assert errors == []
    finally:
        for step in steps:
            step.set()
        thread.join(120)
