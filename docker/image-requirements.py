"""Print the requirements of the stormpy image, one a line, from pyproject.toml: the build
requirements (setup.py's mypyc build), the dependencies and the spark and ui extras.

Contract: the one list of what the image installs besides stormpy itself; read by the Dockerfile
(inside the build) and by docker/stage-build.sh (on the host, to fill the wheelhouse)."""

import sys
import tomllib

with open(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml", "rb") as f:
    project = tomllib.load(f)
extras = project["project"]["optional-dependencies"]
print("\n".join(project["build-system"]["requires"] + project["project"]["dependencies"]
                + extras["spark"] + extras["ui"]))
