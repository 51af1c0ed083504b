"""The os-ken adapter, the only code that touches os-ken: turns FlowRules into flow mods and
OpenFlow events into FabricController calls, and answers the controller's OpenFlow requests
(install, delete_cookie, port and flow stats) for the API.

The controller is handed to the app as a constructor argument by run(), which does what
os-ken's AppManager.run_apps does with one extra keyword (os-ken passes the same keywords to
every app it instantiates; its own OpenFlow handler ignores it).
"""
from __future__ import annotations

import logging
import threading

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import (CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER,
                                       set_ev_cls)
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_3

from controller import openflow_tls
from controller import routing as R
from controller.service import FabricController

LOG = logging.getLogger("mrclab.controller")
OPENFLOW_TIMEOUT_S = 5.0
CONTROLLER_KEYWORD = "mrclab_controller"   # MrcLabApp.__init__ keyword the controller arrives as


class MrcLabApp(app_manager.OSKenApp):
    """The only os-ken code: turns FlowRules into flow mods, events into controller calls."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, mrclab_controller: FabricController, **kwargs):
        super().__init__(*args, **kwargs)
        self.controller = mrclab_controller
        self.controller.openflow = self
        self.datapaths = {}          # switch name -> datapath
        self.ready = set()
        self.waiters = {}            # xid -> (event, replies list)
        self.setup_xids = {}         # barrier xid -> switch name

    # -- interface used by FabricController

    def is_connected(self, switch):
        return switch in self.datapaths

    def connected_count(self):
        return len(self.datapaths)

    def ready_count(self):
        return len(self.ready)

    def _dp(self, switch):
        dp = self.datapaths.get(switch)
        if dp is None:
            raise TimeoutError(f"switch {switch} is not connected")
        return dp

    def _flow_mod(self, dp, rule):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        actions = [parser.OFPActionOutput(ofp.OFPP_IN_PORT if port == R.IN_PORT else port)
                   for kind, port in rule.actions if kind == "output"]
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        return parser.OFPFlowMod(dp, cookie=rule.cookie, table_id=rule.table,
                                 command=ofp.OFPFC_ADD, priority=rule.priority,
                                 match=parser.OFPMatch(**rule.match), instructions=inst)

    def install(self, switch, rules):
        dp = self._dp(switch)
        for rule in rules:
            dp.send_msg(self._flow_mod(dp, rule))
        self._barrier(dp)

    def delete_cookie(self, switch, cookie):
        dp = self._dp(switch)
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(dp, cookie=cookie, cookie_mask=(1 << 64) - 1,
                                      table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
        self._barrier(dp)

    def _request(self, dp, msg, timeout=OPENFLOW_TIMEOUT_S):
        dp.set_xid(msg)
        done = threading.Event()
        self.waiters[msg.xid] = (done, [])
        try:
            dp.send_msg(msg)
            if not done.wait(timeout):
                raise TimeoutError(f"no reply from switch {dp.id:#x} to "
                                   f"{type(msg).__name__} within {timeout} s")
            return self.waiters[msg.xid][1]
        finally:
            self.waiters.pop(msg.xid, None)

    def _stats(self, switch, make_request):
        """A stats request to `switch` and its replies. Stats requests change nothing, so one
        that gets no reply is asked once more, of the switch's current connection (a switch
        that reconnected in between has a new datapath)."""
        try:
            dp = self._dp(switch)
            return self._request(dp, make_request(dp))
        except TimeoutError as err:
            LOG.warning("%s; asking once more", err)
            dp = self._dp(switch)
            return self._request(dp, make_request(dp))

    def _barrier(self, dp):
        self._request(dp, dp.ofproto_parser.OFPBarrierRequest(dp))

    def port_stats(self):
        out = {}
        for name in sorted(self.datapaths):
            ofp = self._dp(name).ofproto
            ports = {}
            for reply in self._stats(name, lambda dp: dp.ofproto_parser.OFPPortStatsRequest(
                    dp, 0, ofp.OFPP_ANY)):
                for st in reply.body:
                    if st.port_no > ofp.OFPP_MAX:
                        continue
                    ports[str(st.port_no)] = {
                        "rx_packets": st.rx_packets, "tx_packets": st.tx_packets,
                        "rx_bytes": st.rx_bytes, "tx_bytes": st.tx_bytes,
                        "rx_dropped": st.rx_dropped, "tx_dropped": st.tx_dropped}
            out[name] = ports
        return out

    def flow_stats(self):
        out = {}
        for name in sorted(self.datapaths):
            ofp = self._dp(name).ofproto
            flows = []
            for reply in self._stats(name, lambda dp: dp.ofproto_parser.OFPFlowStatsRequest(
                    dp, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY)):
                for st in reply.body:
                    flows.append({"table_id": st.table_id, "priority": st.priority,
                                  "match": {k: list(v) if isinstance(v, tuple) else v
                                            for k, v in st.match.items()},
                                  "packet_count": st.packet_count,
                                  "byte_count": st.byte_count, "cookie": st.cookie})
            out[name] = flows
        return out

    # -- events

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def _on_features(self, ev):
        dp = ev.msg.datapath
        name = self.controller.dpid_to_switch.get(dp.id)
        if name is None:
            LOG.warning("ignoring unknown datapath %#x (not in the fabric spec)", dp.id)
            return
        ofp, parser = dp.ofproto, dp.ofproto_parser
        self.ready.discard(name)
        dp.send_msg(parser.OFPFlowMod(dp, table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
        for rule in self.controller.rules_for(name):
            dp.send_msg(self._flow_mod(dp, rule))
        barrier = parser.OFPBarrierRequest(dp)
        dp.set_xid(barrier)
        self.setup_xids[barrier.xid] = (name, dp)
        dp.send_msg(barrier)
        self.datapaths[name] = dp
        LOG.info("switch %s (%#x) connected, %d rules sent", name, dp.id,
                 len(self.controller.installed.get(name, [])))

    @set_ev_cls(ofp_event.EventOFPStateChange, [DEAD_DISPATCHER])
    def _on_state(self, ev):
        dp = ev.datapath
        name = self.controller.dpid_to_switch.get(dp.id)
        if name and self.datapaths.get(name) is dp:
            del self.datapaths[name]
            self.ready.discard(name)
            LOG.warning("switch %s disconnected", name)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _on_barrier(self, ev):
        setup = self.setup_xids.pop(ev.msg.xid, None)
        if setup is not None:
            name, dp = setup
            if self.datapaths.get(name) is dp:
                self.ready.add(name)
            return
        self._reply(ev.msg, more=False)

    def _reply(self, msg, more):
        waiter = self.waiters.get(msg.xid)
        if waiter is None:
            return
        waiter[1].append(msg)
        if not more:
            waiter[0].set()

    @set_ev_cls([ofp_event.EventOFPPortStatsReply, ofp_event.EventOFPFlowStatsReply],
                MAIN_DISPATCHER)
    def _on_stats(self, ev):
        msg = ev.msg
        self._reply(msg, more=bool(msg.flags & msg.datapath.ofproto.OFPMPF_REPLY_MORE))

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def _on_port_status(self, ev):
        msg = ev.msg
        dp, ofp = msg.datapath, msg.datapath.ofproto
        name = self.controller.dpid_to_switch.get(dp.id)
        if name is None:
            return
        desc = msg.desc
        down = bool(desc.state & ofp.OFPPS_LINK_DOWN) or bool(desc.config & ofp.OFPPC_PORT_DOWN)
        reason = {ofp.OFPPR_ADD: "add", ofp.OFPPR_DELETE: "delete",
                  ofp.OFPPR_MODIFY: "modify"}.get(msg.reason, str(msg.reason))
        if msg.reason == ofp.OFPPR_DELETE:
            down = True
        self.controller.on_port_status(name, desc.port_no, not down, reason)


def run(controller: FabricController) -> None:
    """Run MrcLabApp (and os-ken's OpenFlow handler, which it depends on) with `controller`
    until the hub stops. os-ken's options (listen port) must be set before."""
    openflow_tls.serialize_tls_sockets()
    manager = app_manager.AppManager.get_instance()
    manager.load_apps([__name__])
    contexts = manager.create_contexts()
    services = manager.instantiate_apps(**contexts, **{CONTROLLER_KEYWORD: controller})
    try:
        hub.joinall(services)
    finally:
        manager.close()
        for thread in services:
            thread.kill()
        hub.joinall(services)
