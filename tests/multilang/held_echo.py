"""An echo bolt on Storm's own storm.py that stops reading its input at the first tuple until the
file named by $RELEASE_FILE exists (a test fixture: its stdin pipe fills while it holds). With
$DIE_MARKER set, the first run exits with code 1 when released (creating that file), and later
runs echo."""
import os
import time

import storm


class HeldEcho(storm.BasicBolt):
    def process(self, tup):
        release = os.environ["RELEASE_FILE"]
        while not os.path.exists(release):
            time.sleep(0.05)
        marker = os.environ.get("DIE_MARKER")
        if marker and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        storm.emit([tup.values[0]])


HeldEcho().run()
