"""Opens herald-api's reCAPTCHA fallback page (/__/auth/handler) in headless Chromium (Debian's chromium
and chromium-driver, selenium from PyPI) and waits for it to hand the solved token to the app: prints one
JSON object with the callback URL the page went to, the widget's site key and the page's title."""
import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def main():
    url = sys.argv[1]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    seen = {"callback": None}
    try:
        driver.get(url)
        seen["title"] = driver.title
        deadline = time.time() + 20
        while time.time() < deadline and not seen["callback"]:
            seen["callback"] = driver.execute_script("return document.body && document.body.getAttribute('data-callback')")
            time.sleep(0.1)
        seen["siteKey"] = driver.execute_script("return window.fakeWidgetSiteKey || null")
        seen["continueHref"] = driver.execute_script("var a = document.getElementById('continue'); return a ? a.href : null")
        # The console, for a test that fails (CSP refusals and script errors show up here).
        seen["console"] = [entry.get("message") for entry in driver.get_log("browser")]
    finally:
        driver.quit()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
