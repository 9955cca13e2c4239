"""The explorer in a real browser (issue #25 item 2): headless Chromium (Debian's ``chromium`` and
``chromium-driver`` packages, installed by ``.ci/run``; no browser download at run time) driven by Selenium
picks an example, runs it and finds the Reasoner's answer set on the page; a bad upload shows the typed
error. Skipped, with the reason, where no browser is installed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                                reason="no headless browser: apt-get install chromium chromium-driver (.ci/run does)")
pytest.importorskip("selenium", reason="selenium is not installed (the [dev] extra)")
pytest.importorskip("gradio", reason="gradio is not installed (the [explore] extra)")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from clevr_poc import load_dataset  # noqa: E402
from clevr_poc.environments.environment import Environment  # noqa: E402
from clevr_poc.explorer.case_runner import error_line  # noqa: E402
from clevr_poc.reasoning import Reasoner  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OFFICIAL = ROOT / "tests" / "fixtures" / "official_release_small"
IMAGE = OFFICIAL / "output" / "incomplete" / "images" / "testing" / "CLEVR_000000.png"
#: Set CLEVR_POC_EXPLORER_SCREENSHOT=PATH to save the page (docs/images/explorer.png was made so).
SCREENSHOT = os.environ.get("CLEVR_POC_EXPLORER_SCREENSHOT")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False"}
    process = subprocess.Popen([sys.executable, "-m", "clevr_poc", "explore", "--dataset", str(OFFICIAL), "--port",
                                str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):
            if process.poll() is not None:
                pytest.fail(f"the explorer exited: {process.stdout.read()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the explorer did not answer in 120 s")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def browser():
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,2400"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _value(driver, element_id: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, f"#{element_id} textarea").get_attribute("value")


def _wait(driver, predicate, seconds: float = 180):
    return WebDriverWait(driver, seconds, poll_frequency=0.5).until(lambda d: predicate(d))


def test_picking_and_running_an_example_shows_the_reasoners_answer(server, browser):
    browser.get(server)
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#run-example"))
    browser.find_element(By.CSS_SELECTOR, "#example input").click()
    options = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=option]"))
    assert len(options) == 6
    options[3].click()  # the fourth example in the list: testing #3
    assert browser.find_element(By.CSS_SELECTOR, "#example input").get_attribute("value").startswith("· testing #3:")
    browser.find_element(By.CSS_SELECTOR, "#scene-source input[value=gold]").click()
    browser.find_element(By.CSS_SELECTOR, "#query-source input[value=gold]").click()
    browser.find_element(By.CSS_SELECTOR, "#run-example").click()
    answer = _wait(browser, lambda d: _value(d, "answer"))
    example = load_dataset(OFFICIAL, "testing")[3]
    expected = Reasoner().answer(example.environment, example.partial_scene, example.question.asp_query).values
    assert answer == "{" + ", ".join(sorted(expected)) + "}"
    assert _value(browser, "score").startswith(answer.replace("{", "gold {", 1))
    assert _value(browser, "query") == example.question.asp_query
    assert _value(browser, "constraints-english").splitlines()[0] == example.environment.constraints[0].describe()
    assert "values" in _value(browser, "explanation")
    if SCREENSHOT:
        browser.save_screenshot(SCREENSHOT)


def test_a_bad_upload_shows_the_typed_error_and_the_server_goes_on(server, browser, tmp_path):
    browser.get(server)
    tab = _wait(browser, lambda d: [b for b in d.find_elements(By.CSS_SELECTOR, "button[role=tab]")
                                    if b.text.strip() == "Upload"])
    tab[0].click()
    bad = tmp_path / "environment.lp"
    bad.write_text("object(0..3).\n#script (python)\nimport os\n#end.\n")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#upload-image input[type=file]"))
    browser.find_element(By.CSS_SELECTOR, "#upload-image input[type=file]").send_keys(str(IMAGE))
    browser.find_element(By.CSS_SELECTOR, "#upload-environment input[type=file]").send_keys(str(bad))
    browser.find_element(By.CSS_SELECTOR, "#upload-question textarea").send_keys("What size is the red thing?")
    time.sleep(2)  # let the uploads finish
    browser.find_element(By.CSS_SELECTOR, "#run-upload").click()
    shown = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#error").text.strip())
    with pytest.raises(Exception) as raised:
        Environment.from_lp(bad)
    expected = error_line(raised.value)  # what the command line prints, naming our copy of the file
    assert shown.startswith("error: ") and "\n" not in shown
    assert shown.split(": ", 2)[-1] == expected.split(": ", 2)[-1]  # the same message (the path is the server's copy)
    # the server is still up and answers the next request
    with urllib.request.urlopen(server, timeout=10) as response:
        assert response.status == 200
