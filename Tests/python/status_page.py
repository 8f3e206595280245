"""Drives the status page in headless Chromium (Debian's chromium and chromium-driver, selenium from
PyPI): log in with the admin token, search a message by number and open it, replay one dead letter.
Screenshots go to the directory given. Prints one JSON object with what it saw."""
import json
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


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
        driver.find_element(By.CSS_SELECTOR, "form[action='/admin/login'] button").click()
        seen["dashboard"] = driver.find_element(By.ID, "queues").text
        cookies = driver.get_cookies()
        seen["cookie"] = [{k: c.get(k) for k in ("name", "httpOnly", "sameSite")} for c in cookies]
        driver.save_screenshot(os.path.join(shots, "dashboard.png"))

        search = driver.find_element(By.NAME, "to")
        search.send_keys(number)
        search.submit()
        rows = driver.find_elements(By.CSS_SELECTOR, "#message-list tr")[1:]
        seen["found"] = [row.text for row in rows]
        driver.save_screenshot(os.path.join(shots, "search.png"))
        rows[0].find_element(By.TAG_NAME, "a").click()
        seen["events"] = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#events tr")[1:]]
        driver.save_screenshot(os.path.join(shots, "message.png"))

        driver.get(base + "/admin/#dead-letters")
        seen["deadLetters"] = driver.find_element(By.ID, "dead-letters").text
        button = driver.find_element(By.XPATH, f"//form[input[@name='id' and @value='{dead_id}']]/button")
        button.click()
        seen["replayed"] = driver.find_element(By.ID, "replayed").text
        driver.save_screenshot(os.path.join(shots, "replay.png"))
    finally:
        driver.quit()
    print(json.dumps(seen))


main()
