#!/usr/bin/env bash
# Placeholder replaced by the data issue; prepares nothing yet.
exit 0
