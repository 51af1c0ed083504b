# The transport core may run compiled (traffic/compiled.py decides, and says why).
from traffic import compiled as _compiled

__path__ = _compiled.search_path(__path__)
