"""Storm's multilang protocol: shell components in any language, and pystorm/streamparse
components run unchanged, through a subprocess or in-process (docs/multilang.md).

Built on the public topology API and its documented seams only (the off-loop seam's
``call_soon_threadsafe`` hands subprocess output back to the executor loop).
"""

from stormpy._public import publish
from stormpy.multilang._pystorm_spec import PystormComponent, pystorm_component
from stormpy.multilang._serializers import JsonCodec, MsgpackCodec, codec_named
from stormpy.multilang._shell import ShellComponentError
from stormpy.multilang._shell_bolt import ShellBolt
from stormpy.multilang._shell_spout import ShellSpout

__all__ = ["JsonCodec", "MsgpackCodec", "PystormComponent", "ShellBolt", "ShellComponentError",
           "ShellSpout", "codec_named", "pystorm_component"]

publish(__name__, globals())
