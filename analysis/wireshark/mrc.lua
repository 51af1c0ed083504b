-- Wireshark dissector for MRC lab's MRC headers over UDP 4791 (RoCEv2 port).
--
--   tshark -X lua_script:analysis/wireshark/mrc.lua -r capture.pcap -V
--   wireshark -X lua_script:analysis/wireshark/mrc.lua capture.pcap
--   (or copy this file into ~/.local/lib/wireshark/plugins/)
--
-- Layout (traffic/WIRE_FORMAT.md; traffic/layers.py defines it):
--   BTH 12 B (opcode, SE/M/pad/tver, pkey, byte 4: FECN 0x80 / BECN 0x40 / retransmission 0x20,
--   dest QP 24 bits, AckReq bit, PSN 24 bits), then by opcode:
--   WRITE 0xC6..0xCB: METH (flags 8 bits, bit0 = TSETH present; MSN 24) / [TSETH 8] /
--                     RETH (VA 8, rkey 4, DMA length 4) / [ImmDt 4 on *_IMM] / payload / ICRC 4
--   SACK 0xDC, NACK 0xDD: fixed bodies, then ICRC 4.
--   EP_REQUEST 0xD8 / EP_RESPONSE 0xD9 (EV probes): EPH 20 B (operation, port status, probed EV,
--                     source QP, timestamp), then ICRC 4; the probe id is the BTH PSN.
--   ACK 0xD1 and RELIABILITY_PROBE 0xDE are named but not sent by this emulator.
-- EV (entropy value, 32 bits) = (inner IPv6 flow label & 0xffff) << 16 | UDP source port;
-- bits 31..28 plane, 27..22 spine (T1), 15..0 entropy (model/topology.py).
-- SRv6 uSID container (outer IPv6 destination, model/topology.py): locator block fcbb:bb00
-- (32 bits), then one 16-bit uSID per hop: 0x1000|plane<<8|group = a T0, 0x2000|plane<<8|spine
-- = a T1 (0 when source and destination share a T0 group), 0x3000|n = the downlink to host n
-- of the destination's group; trailing zeros end the container.
-- Trimmed packets carry outer DSCP 0x3B (TRIMMED) or 0x3F (TRIMMED_LASTHOP) (model/dscp.py).
-- The UDP checksum is 0, as RoCEv2 over IPv6 sends it (the ICRC covers the packet); Wireshark's
-- UDP dissector calls that an error unless its preference "Ignore zero-value IPv6 UDP
-- checksums" is on: `-o udp.ignore_ipv6_zero_checksum:TRUE` (mrclab wireshark passes it).
-- The RoCE baseline sends the same headers over ECMP (no SRv6 container): with the preference
-- mrc.transport = auto (default) such packets are labelled RoCE; `-o mrc.transport:roce|mrc`
-- forces one label (mrclab wireshark --transport sets it).
--
-- Wireshark's built-in InfiniBand dissector also registers UDP port 4791; adding this one to the
-- udp.port table after it replaces that entry, so MRC wins on 4791 (verified by the test
-- tests/integration/test_analysis_wireshark.py, which checks the protocol column says MRC).

local mrc = Proto("mrc", "MRC (Multipath Reliable Connection, MRC lab)")

local opcodes = {
  [0xC6] = "WRITE_FIRST", [0xC7] = "WRITE_MIDDLE", [0xC8] = "WRITE_LAST",
  [0xC9] = "WRITE_LAST_IMM", [0xCA] = "WRITE_ONLY", [0xCB] = "WRITE_ONLY_IMM",
  [0xD1] = "ACK", [0xD8] = "EP_REQUEST", [0xD9] = "EP_RESPONSE",
  [0xDC] = "SACK", [0xDD] = "NACK", [0xDE] = "RELIABILITY_PROBE",
}
local nack_reasons = {
  [0x01] = "TRIMMED", [0x02] = "TRIMMED_LASTHOP", [0x06] = "NO_BITMAP", [0x07] = "NO_PKT_BUFFER",
  [0x0A] = "NO_RESOURCE", [0x0B] = "PSN_OOR_WINDOW", [0x19] = "UNEXP_EVENT",
}
local skip_modes = { [0] = "NONE", [1] = "SKIP_ONCE (ECN echo)", [2] = "ALWAYS_SKIP" }
local ep_ops = { [0] = "EV_PROBE", [1] = "PORT_STATUS_UPDATE" }

local f = mrc.fields
f.opcode   = ProtoField.uint8("mrc.opcode", "Opcode", base.HEX, opcodes)
f.se       = ProtoField.bool("mrc.se", "Solicited event", 8, nil, 0x80)
f.migreq   = ProtoField.bool("mrc.m", "MigReq", 8, nil, 0x40)
f.pad      = ProtoField.uint8("mrc.pad", "Pad count", base.DEC, nil, 0x30)
f.tver     = ProtoField.uint8("mrc.tver", "Header version", base.DEC, nil, 0x0F)
f.pkey     = ProtoField.uint16("mrc.pkey", "Partition key", base.HEX)
f.fecn     = ProtoField.bool("mrc.fecn", "FECN", 8, nil, 0x80)
f.becn     = ProtoField.bool("mrc.becn", "BECN", 8, nil, 0x40)
f.retx     = ProtoField.bool("mrc.retransmission", "Retransmission", 8, nil, 0x20)
f.qp       = ProtoField.uint24("mrc.qp", "Destination QP", base.HEX)
f.ackreq   = ProtoField.bool("mrc.ackreq", "AckReq", 8, nil, 0x80)
f.psn      = ProtoField.uint24("mrc.psn", "PSN", base.DEC)
f.ev       = ProtoField.uint32("mrc.ev", "Entropy value (EV)", base.HEX)
f.ev_plane = ProtoField.uint8("mrc.ev.plane", "EV plane", base.DEC)
f.ev_spine = ProtoField.uint8("mrc.ev.spine", "EV spine (T1)", base.DEC)
f.ev_ent   = ProtoField.uint16("mrc.ev.entropy", "EV entropy", base.HEX)
-- METH / TSETH / RETH / ImmDt
f.meth_flags = ProtoField.uint8("mrc.meth.flags", "METH flags", base.HEX)
f.meth_ts    = ProtoField.bool("mrc.meth.tseth", "TSETH present", 8, nil, 0x01)
f.msn        = ProtoField.uint24("mrc.meth.msn", "MSN", base.DEC)
f.tseth      = ProtoField.uint64("mrc.tseth.timestamp", "TSETH timestamp (ns)", base.DEC)
f.va         = ProtoField.uint64("mrc.reth.va", "RETH virtual address", base.HEX)
f.rkey       = ProtoField.uint32("mrc.reth.rkey", "RETH rkey", base.HEX)
f.dmalen     = ProtoField.uint32("mrc.reth.dmalen", "RETH DMA length", base.DEC)
f.imm        = ProtoField.uint32("mrc.immdt", "Immediate data", base.HEX)
f.payload    = ProtoField.bytes("mrc.payload", "Payload")
f.paylen     = ProtoField.uint32("mrc.payload_len", "Payload length", base.DEC)
f.icrc       = ProtoField.uint32("mrc.icrc", "ICRC (CRC-32 of BTH..payload)", base.HEX)
f.trimmed    = ProtoField.bool("mrc.trimmed", "Trimmed (headers only)")
-- SACK
f.sack_cum   = ProtoField.uint24("mrc.sack.cum_psn", "Cumulative PSN", base.DEC)
f.sack_base  = ProtoField.uint32("mrc.sack.base", "SACK base PSN", base.DEC)
f.sack_bmp   = ProtoField.uint64("mrc.sack.bitmap", "SACK bitmap", base.HEX)
f.sack_ev    = ProtoField.uint32("mrc.sack.ev", "Reflected EV", base.HEX)
f.sack_skip  = ProtoField.uint8("mrc.sack.skip", "Skip (M field)", base.DEC, skip_modes)
f.sack_mpr   = ProtoField.uint8("mrc.sack.mpr", "MPR (x128 PSNs)", base.DEC)
f.port_status = ProtoField.uint8("mrc.port_status", "Port status bitmap", base.HEX)
f.echo_ts    = ProtoField.uint64("mrc.echo_ts", "Echoed timestamp (ns)", base.DEC)
f.sack_ooo   = ProtoField.uint32("mrc.sack.ooo_count", "Out-of-order count", base.DEC)
f.sack_pen   = ProtoField.uint32("mrc.sack.window_penalty", "Window penalty", base.DEC)
f.sack_rx    = ProtoField.uint64("mrc.sack.rx_bytes", "Received bytes", base.DEC)
-- NACK
f.nack_reason = ProtoField.uint8("mrc.nack.reason", "NACK reason", base.HEX, nack_reasons)
f.nack_ev     = ProtoField.uint32("mrc.nack.ev", "NACK EV", base.HEX)
-- Endpoint request / response (EV probe)
f.ep_op       = ProtoField.uint8("mrc.ep.op", "Endpoint operation", base.DEC, ep_ops)
f.probe_resp  = ProtoField.bool("mrc.probe.response", "Response")
f.probe_seq   = ProtoField.uint24("mrc.probe.seq", "Probe id (BTH PSN)", base.DEC)
f.probe_ev    = ProtoField.uint32("mrc.probe.ev", "Probed EV", base.HEX)
f.probe_srcqp = ProtoField.uint32("mrc.probe.src_qp", "Source QP", base.HEX)
f.probe_ts    = ProtoField.uint64("mrc.probe.timestamp", "Probe timestamp (ns)", base.DEC)

-- SRv6 uSID container, trim DSCP, checksum, payload length from the headers
f.usid_locator = ProtoField.uint32("mrc.srv6.locator", "uSID locator block", base.HEX)
f.usid       = ProtoField.uint16("mrc.srv6.usid", "uSID", base.HEX)
f.usid_hop   = ProtoField.string("mrc.srv6.hop", "Hop")
f.trim_dscp  = ProtoField.uint8("mrc.trim_dscp", "Outer DSCP", base.HEX,
                                { [0x3B] = "TRIMMED (cut to its headers by a congested switch)",
                                  [0x3F] = "TRIMMED_LASTHOP (cut by the receiver's last-hop port)" })
f.udp_zero   = ProtoField.string("mrc.udp_checksum", "UDP checksum")
f.wire_paylen = ProtoField.uint32("mrc.wire_payload_len", "Payload length on the wire (from UDP length)",
                                  base.DEC)
f.transport  = ProtoField.string("mrc.transport", "Transport")

local ef_short = ProtoExpert.new("mrc.short", "MRC header cut short (snap length or trimming)",
                                 expert.group.MALFORMED, expert.severity.WARN)
local ef_cut = ProtoExpert.new("mrc.payload_not_captured",
                               "Payload not captured (snap length); its length is from the UDP header",
                               expert.group.SEQUENCE, expert.severity.CHAT)
mrc.experts = { ef_short, ef_cut }

local TRANSPORT_AUTO, TRANSPORT_MRC, TRANSPORT_ROCE = 0, 1, 2
mrc.prefs.transport = Pref.enum("Transport", TRANSPORT_AUTO,
  "auto: RoCE when the packet has no SRv6 uSID container (the RoCE baseline runs over ECMP), "
  .. "else MRC; mrc or roce: label every packet so",
  { { 1, "auto", TRANSPORT_AUTO }, { 2, "mrc", TRANSPORT_MRC }, { 3, "roce", TRANSPORT_ROCE } },
  false)

local udp_srcport_f = Field.new("udp.srcport")
local udp_length_f = Field.new("udp.length")
local udp_checksum_f = Field.new("udp.checksum")
local ipv6_flow_f = Field.new("ipv6.flow")
local ipv6_dst_f = Field.new("ipv6.dst")
local ipv6_dscp_f = Field.new("ipv6.tclass.dscp")

local USID_LOCATOR = 0xFCBBBB00

local function usid_hop(u)
  local kind, plane, low = bit32.rshift(u, 12), bit32.band(bit32.rshift(u, 8), 0xF), bit32.band(u, 0xFF)
  if kind == 1 then return string.format("T0 t0p%dg%d (plane %d, group %d)", plane, low, plane, low) end
  if kind == 2 then return string.format("T1 t1p%ds%d (plane %d, spine %d)", plane, low, plane, low) end
  if kind == 3 then return string.format("downlink to host %d of the destination T0's group", bit32.band(u, 0xFFF)) end
  return "unknown uSID"
end

-- The outer IPv6 destination as a uSID container: adds its subtree, returns true if it is one.
local function add_usid_container(tree, dst)
  if dst == nil or dst.range == nil or dst.range:len() ~= 16 then return false end
  local r = dst.range
  if r:range(0, 4):uint() ~= USID_LOCATOR then return false end
  local c = tree:add(mrc, r, "SRv6 uSID container (outer IPv6 destination)")
  c:add(f.usid_locator, r:range(0, 4))
  local last = 0
  for slot = 1, 6 do
    if r:range(2 + 2 * slot, 2):uint() ~= 0 then last = slot end
  end
  for slot = 1, last do
    local sr = r:range(2 + 2 * slot, 2)
    local u = sr:uint()
    local hop = (u == 0 and slot == 2) and "no T1: source and destination under one T0 group"
                or usid_hop(u)
    c:add(f.usid, sr):append_text(string.format(" (slot %d: %s)", slot, hop))
    c:add(f.usid_hop, hop):set_generated()
  end
  return true
end

local function need(tvb, tree, off, len)
  if tvb:len() < off + len then
    tree:add_proto_expert_info(ef_short)
    return false
  end
  return true
end

function mrc.dissector(tvb, pinfo, root)
  if tvb:len() < 12 then return 0 end
  local dsts = { ipv6_dst_f() }
  local has_container = #dsts > 0 and dsts[1].range ~= nil and dsts[1].range:len() == 16
                        and dsts[1].range:range(0, 4):uint() == USID_LOCATOR
  local roce = mrc.prefs.transport == TRANSPORT_ROCE
               or (mrc.prefs.transport == TRANSPORT_AUTO and not has_container)
  local label = roce and "RoCE" or "MRC"
  pinfo.cols.protocol = label
  local tree = root:add(mrc, tvb(), roce and "RoCEv2 RC (MRC lab's single-path baseline, MRC lab headers)"
                                        or "MRC")
  tree:add(f.transport, roce and "RoCE (baseline)" or "MRC"):set_generated()
  if has_container then add_usid_container(tree, dsts[1]) end
  local dscps = { ipv6_dscp_f() }
  if #dscps > 0 then
    local dscp = dscps[1].value
    if dscp == 0x3B or dscp == 0x3F then tree:add(f.trim_dscp, dscp):set_generated() end
  end
  local cks = udp_checksum_f()
  if cks and cks.value == 0 then
    tree:add(f.udp_zero, "0: expected (RoCEv2 over IPv6 sends no UDP checksum; the ICRC covers the packet)")
        :set_generated()
  end
  local udp_len = udp_length_f()
  local opcode = tvb(0, 1):uint()
  local op_name = opcodes[opcode] or string.format("0x%02X", opcode)
  local bth = tree:add(mrc, tvb(0, 12), "Base Transport Header")
  bth:add(f.opcode, tvb(0, 1))
  bth:add(f.se, tvb(1, 1)); bth:add(f.migreq, tvb(1, 1))
  bth:add(f.pad, tvb(1, 1)); bth:add(f.tver, tvb(1, 1))
  bth:add(f.pkey, tvb(2, 2))
  bth:add(f.fecn, tvb(4, 1)); bth:add(f.becn, tvb(4, 1)); bth:add(f.retx, tvb(4, 1))
  bth:add(f.qp, tvb(5, 3))
  bth:add(f.ackreq, tvb(8, 1))
  bth:add(f.psn, tvb(9, 3))
  local qp, psn = tvb(5, 3):uint(), tvb(9, 3):uint()

  -- EV from the UDP source port and the innermost IPv6 flow label
  local sport = udp_srcport_f()
  local flows = { ipv6_flow_f() }
  local ev = nil
  if sport and #flows > 0 then
    local fl = flows[#flows].value
    ev = (bit32.band(fl, 0xFFFF) * 65536) + sport.value
    local evt = tree:add(f.ev, ev):set_generated()
    evt:add(f.ev_plane, bit32.rshift(ev, 28)):set_generated()
    evt:add(f.ev_spine, bit32.band(bit32.rshift(ev, 22), 0x3F)):set_generated()
    evt:add(f.ev_ent, bit32.band(ev, 0xFFFF)):set_generated()
  end

  local info = string.format("%s %s QP=0x%x PSN=%d", label, op_name, qp, psn)
  if bit32.band(tvb(4, 1):uint(), 0x20) ~= 0 then info = info .. " [RETX]" end
  local off = 12
  if opcode >= 0xC6 and opcode <= 0xCB then
    if need(tvb, tree, off, 4) then
      local flags = tvb(off, 1):uint()
      local meth = tree:add(mrc, tvb(off, 4), "METH")
      meth:add(f.meth_flags, tvb(off, 1)); meth:add(f.meth_ts, tvb(off, 1))
      meth:add(f.msn, tvb(off + 1, 3))
      info = info .. string.format(" MSN=%d", tvb(off + 1, 3):uint())
      off = off + 4
      if bit32.band(flags, 1) ~= 0 and need(tvb, tree, off, 8) then
        tree:add(f.tseth, tvb(off, 8)); off = off + 8
      end
      if need(tvb, tree, off, 16) then
        local reth = tree:add(mrc, tvb(off, 16), "RETH")
        reth:add(f.va, tvb(off, 8)); reth:add(f.rkey, tvb(off + 8, 4))
        reth:add(f.dmalen, tvb(off + 12, 4))
        off = off + 16
        if (opcode == 0xC9 or opcode == 0xCB) and need(tvb, tree, off, 4) then
          tree:add(f.imm, tvb(off, 4))
          info = info .. string.format(" IMM=0x%x", tvb(off, 4):uint())
          off = off + 4
        end
        local rest = tvb:len() - off
        -- the payload's length on the wire, from the UDP header (the capture may be cut)
        local wire = udp_len and (udp_len.value - 8 - off - 4) or (rest - 4)
        if wire <= 0 and rest < 4 then
          tree:add(f.trimmed, true):set_generated()
          info = info .. " [TRIMMED]"
        elseif rest >= wire + 4 then
          if wire > 0 then tree:add(f.payload, tvb(off, wire)) end
          tree:add(f.paylen, wire):set_generated()
          tree:add(f.icrc, tvb(off + wire, 4))
          info = info .. string.format(" len=%d", wire)
        else
          if rest > 0 then tree:add(f.payload, tvb(off, rest)) end
          tree:add(f.paylen, wire):set_generated()
          tree:add(f.wire_paylen, wire):set_generated()
          tree:add_proto_expert_info(ef_cut)
          info = info .. string.format(" len=%d", wire)
        end
      end
    end
  elseif opcode == 0xDC then
    if need(tvb, tree, off, 48) then
      local s = tree:add(mrc, tvb(off, 48), "SACK")
      s:add(f.sack_cum, tvb(off + 1, 3)); s:add(f.sack_base, tvb(off + 4, 4))
      s:add(f.sack_bmp, tvb(off + 8, 8)); s:add(f.sack_ev, tvb(off + 16, 4))
      s:add(f.sack_skip, tvb(off + 20, 1)); s:add(f.sack_mpr, tvb(off + 21, 1))
      s:add(f.port_status, tvb(off + 22, 1)); s:add(f.echo_ts, tvb(off + 24, 8))
      s:add(f.sack_ooo, tvb(off + 32, 4)); s:add(f.sack_pen, tvb(off + 36, 4))
      s:add(f.sack_rx, tvb(off + 40, 8))
      info = info .. string.format(" cum=%d bitmap=0x%s", tvb(off + 1, 3):uint(),
                                   tvb(off + 8, 8):bytes():tohex())
      if need(tvb, tree, off + 48, 4) then tree:add(f.icrc, tvb(off + 48, 4)) end
    end
  elseif opcode == 0xDD then
    if need(tvb, tree, off, 16) then
      local n = tree:add(mrc, tvb(off, 16), "NACK")
      n:add(f.nack_reason, tvb(off, 1)); n:add(f.port_status, tvb(off + 1, 1))
      n:add(f.nack_ev, tvb(off + 4, 4)); n:add(f.echo_ts, tvb(off + 8, 8))
      local r = tvb(off, 1):uint()
      info = info .. " reason=" .. (nack_reasons[r] or string.format("0x%02X", r))
      if need(tvb, tree, off + 16, 4) then tree:add(f.icrc, tvb(off + 16, 4)) end
    end
  elseif opcode == 0xD8 or opcode == 0xD9 then
    if need(tvb, tree, off, 20) then
      local resp = opcode == 0xD9
      local op = tvb(off, 1):uint()
      local p = tree:add(mrc, tvb(off, 20), op == 0 and "EV probe" or "Endpoint request")
      p:add(f.ep_op, tvb(off, 1))
      p:add(f.probe_resp, resp):set_generated()
      p:add(f.probe_seq, tvb(9, 3)):set_generated()
      p:add(f.port_status, tvb(off + 1, 1))
      p:add(f.probe_ev, tvb(off + 4, 4)); p:add(f.probe_srcqp, tvb(off + 8, 4))
      p:add(f.probe_ts, tvb(off + 12, 8))
      info = info .. string.format(" %s %s id=%d", ep_ops[op] or string.format("op %d", op),
                                   resp and "response" or "request", psn)
      if need(tvb, tree, off + 20, 4) then tree:add(f.icrc, tvb(off + 20, 4)) end
    end
  end
  if ev then info = info .. string.format(" EV=0x%08x", ev) end
  pinfo.cols.info = info
  return tvb:len()
end

DissectorTable.get("udp.port"):add(4791, mrc)
