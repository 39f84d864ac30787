#!/usr/bin/env bash
# Debian's chromium and its WebDriver for tests/test_survey_html.py: the survey report page is
# loaded in a real headless browser (selenium, from the test extra, drives it). Fonts so the
# screenshots it saves are readable. Without them those tests skip with the reason.
set -euo pipefail
pkgs="chromium chromium-driver fonts-liberation fonts-dejavu-core"
if [ "$(id -u)" = 0 ] && ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends $pkgs >/dev/null; } \
    || echo "note: could not install $pkgs; the survey report browser tests will skip"
fi
