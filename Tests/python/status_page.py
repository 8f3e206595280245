"""Drives the status page in headless Chromium (Debian's chromium and chromium-driver, selenium from
PyPI): log in with the admin token, search a message by number and open it, replay one dead letter.
Screenshots go to the directory given. Prints one JSON object with what it saw."""
import json
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

# A loaded machine (the whole suite, CI) can take seconds per page.
PATIENCE = 30


def navigate(driver, action):
    """Runs `action` (a click or submit that loads another page) and waits until that page replaced
    this one: Selenium's click does not wait for a form's POST and redirect, and looking for the next
    page's element at once raced it (seen: no #replayed on a loaded CI machine)."""
    old = driver.find_element(By.TAG_NAME, "html")
    action()
    WebDriverWait(driver, PATIENCE).until(expected_conditions.staleness_of(old))


def present(driver, by, value):
    """The element, once the page has it."""
    return WebDriverWait(driver, PATIENCE).until(expected_conditions.presence_of_element_located((by, value)))


def main():
    base, token, number, dead_id, shots = sys.argv[1:6]
    os.makedirs(shots, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,2000"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    seen = {}
    try:
        driver.get(base + "/admin/")
        seen["loginForm"] = len(driver.find_elements(By.NAME, "token")) == 1
        driver.find_element(By.NAME, "token").send_keys(token)
        navigate(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/admin/login'] button").click)
        seen["dashboard"] = present(driver, By.ID, "queues").text
        cookies = driver.get_cookies()
        seen["cookie"] = [{k: c.get(k) for k in ("name", "httpOnly", "sameSite")} for c in cookies]
        driver.save_screenshot(os.path.join(shots, "dashboard.png"))

        search = driver.find_element(By.NAME, "to")
        search.send_keys(number)
        navigate(driver, search.submit)
        present(driver, By.ID, "message-list")
        rows = driver.find_elements(By.CSS_SELECTOR, "#message-list tr")[1:]
        seen["found"] = [row.text for row in rows]
        driver.save_screenshot(os.path.join(shots, "search.png"))
        navigate(driver, rows[0].find_element(By.TAG_NAME, "a").click)
        present(driver, By.ID, "events")
        seen["events"] = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#events tr")[1:]]
        driver.save_screenshot(os.path.join(shots, "message.png"))

        driver.get(base + "/admin/#dead-letters")
        seen["deadLetters"] = present(driver, By.ID, "dead-letters").text
        button = driver.find_element(By.XPATH, f"//form[input[@name='id' and @value='{dead_id}']]/button")
        navigate(driver, button.click)
        seen["replayed"] = present(driver, By.ID, "replayed").text
        driver.save_screenshot(os.path.join(shots, "replay.png"))
    finally:
        driver.quit()
    print(json.dumps(seen))


main()
