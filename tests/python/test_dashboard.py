"""The admin port's dashboard in a real browser: Debian's headless Chromium, driven by Selenium,
loads /dashboard from a server with three tenants under load, and the numbers on the page match
/stats.json once the load stops. The screenshot goes to $FRIDGE_DASHBOARD_SCREENSHOT (docs/
dashboard.png was made so) or a temporary file."""

import json
import os
import shutil
import threading
import time
import urllib.request

import pytest
import redis
from conftest import tenants_toml
from test_metrics import launch_with_admin, stop

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (scripts/test installs it)")
CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
TENANTS = {"shop": ("pw-shop", ['reserved = "8MiB"']), "blog": ("pw-blog", ['reserved = "4MiB"']),
           "api": ("pw-api", [])}


def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=900,1300"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def load(port, name, password, stop_flag, keys):
    r = redis.Redis(port=port, username=name, password=password)
    i = 0
    while not stop_flag.is_set():
        r.set(f"{name}:{i % keys}", "v" * 100)
        r.get(f"{name}:{(i * 7) % (keys * 2)}")
        i += 1


@pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="chromium and chromium-driver (scripts/test installs them)")
def test_the_dashboard_shows_what_the_server_reports(tmp_path):
    path = tmp_path / "dashboard.toml"
    path.write_text(tenants_toml(TENANTS, allow_unauthenticated="true"))
    proc, port, admin = launch_with_admin("--config", str(path))
    stop_flag = threading.Event()
    loaders = [threading.Thread(target=load, args=(port, name, pw, stop_flag, keys), daemon=True)
               for (name, (pw, _)), keys in zip(TENANTS.items(), (300, 200, 100))]
    for t in loaders:
        t.start()
    driver = browser()
    try:
        driver.get(f"http://127.0.0.1:{admin}/dashboard")
        wait_for(lambda: driver.execute_script("return document.body.dataset.updated"))
        time.sleep(2.5)  # a few ticks under load: the rate chart has points
        ops = driver.find_element("id", "ops").text.replace(",", "")
        assert ops.isdigit() and int(ops) > 0, ops
        stop_flag.set()
        for t in loaders:
            t.join()
        # Quiet now: once the page has redrawn, its numbers are the server's.
        time.sleep(1.5)
        before = driver.execute_script("return document.body.dataset.updated")
        wait_for(lambda: driver.execute_script("return document.body.dataset.updated") != before)
        with urllib.request.urlopen(f"http://127.0.0.1:{admin}/stats.json", timeout=5) as r:
            data = json.load(r)
        # Read in one script: the page redraws its tables each second.
        rows = driver.execute_script("""
            const rows = {};
            for (const tr of document.querySelectorAll("#tenants tbody tr")) {
              rows[tr.dataset.tenant] = {};
              for (const td of tr.children) rows[tr.dataset.tenant][td.dataset.field] = td.dataset.value;
            }
            return rows;""")
        assert set(rows) >= set(TENANTS), rows
        for name in TENANTS:
            for field in ("items", "bytes", "reserved", "hits", "misses", "evictions"):
                assert float(rows[name][field]) == data["tenants"][name][field], (name, field)
        assert rows["shop"]["reserved"] == str(8 << 20)
        assert driver.find_element("id", "items").text == f"{data['stats']['curr_items']:,}"
        hits, misses = data["stats"]["get_hits"], data["stats"]["get_misses"]
        assert driver.find_element("id", "hit-ratio").text == f"{hits / (hits + misses):.3f}"
        commands = driver.execute_script(
            "return [...document.querySelectorAll('#latency tbody tr')].map((tr) => tr.dataset.command)")
        assert {"get", "set"} <= set(commands), commands
        hot = driver.execute_script(
            "return [...document.querySelectorAll('#hotkeys tbody tr')]"
            ".map((tr) => [tr.dataset.key, tr.children[3].textContent])")
        assert hot and hot == [[k["key"], f"{k['count']:,}"] for k in data["hotkeys"]["keys"]], hot
        shot = os.environ.get("FRIDGE_DASHBOARD_SCREENSHOT") or str(tmp_path / "dashboard.png")
        assert driver.save_screenshot(shot)
        assert os.path.getsize(shot) > 10_000
    finally:
        stop_flag.set()
        driver.quit()
        stop(proc)


def wait_for(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise TimeoutError("the page did not update")
