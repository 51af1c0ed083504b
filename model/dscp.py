"""Traffic-class values the fabric writes and the endpoints read (outermost IPv6 header).

They are code points on the wire, so they live in the wire table (model/wire.py, which says
what each is for and why); re-exported here under their established module name.
"""
from model.wire import (DSCP_CONTROL, DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP,  # noqa: F401
                        ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, PRIORITY_DSCPS, TRIMMED_DSCPS)
