"""Moved to model.topology (the shared model every package imports). Temporary: kept only while
branches written against the old path are merged; import model.topology."""
from model import topology as _moved

globals().update({k: v for k, v in vars(_moved).items() if not k.startswith("__")})
