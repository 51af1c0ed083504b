// In-fabric packet trimming and queue-based ECN for MRC lab.
//
// Attached at tc clsact egress of one switch port (one program instance and its own maps per
// port, so ifindex collisions between network namespaces cannot mix ports up). It keeps a
// virtual queue: the bytes offered to the port minus what the configured link rate has drained
// since the previous packet. Userspace OVS and HTB do not expose their queue to a BPF program,
// so the virtual queue stands in for the switch buffer:
//   - above ecn_min_bytes: mark CE on the outermost IPv6 header of ECN-capable packets with a
//     probability rising linearly to 1 at ecn_max_bytes (RED-like), never on a last-hop port;
//   - above trim_bytes: an MRC data packet (RDMA WRITE family, UDP 4791) is cut to its headers,
//     its lengths fixed and its outer DSCP set to TRIMMED (TRIMMED_LASTHOP on a last hop); only
//     the header bytes enter the virtual queue;
//   - above drop_bytes: packets that cannot be trimmed (non-MRC, MRC control, trimming off) are
//     dropped; trimmed headers never are.
// The same arithmetic lives in emulation/network/vqueue.py (the pure model the unit tests check); keep
// both in step.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Lengths, offsets, opcodes, the UDP port, DSCP and ECN code points: generated from the wire
// table (model/wire.py) by scripts/gen_wire.py, so this program and the Python code that
// reads the same bytes cannot disagree.
#include "mrc_wire.h"

#define MAX_MRC_HDR (ETH_HLEN + 2 * IPV6_HLEN + UDP_HLEN + BTH_LEN + METH_LEN + TSETH_LEN + RETH_LEN + IMMDT_LEN)

#define CFG_CONFIGURED (1u << 0)
#define CFG_MARK (1u << 1)
#define CFG_TRIM (1u << 2)
#define CFG_LAST_HOP (1u << 3)

// skb->mark of a trimmed header sent back through this port's egress (see the end of
// mrc_trim): the kernel sizes a packet for the qdisc (qdisc_pkt_len) before the clsact egress
// hook runs, so a header cut here would still cost HTB the whole packet's transmission time.
// Redirected to the same port, the header is sized again; on that second pass the program
// only clears the mark (the header was counted in the virtual queue on the first).
#define TRIM_REQUEUE_MARK 0x4d524354u   // "MRCT"

#define NS_PER_S 1000000000ULL
#define MAX_DRAIN_SECONDS 1000ULL

struct port_config {
	__u64 rate_bytes_per_s;
	__u32 ecn_min_bytes;
	__u32 ecn_max_bytes;
	__u32 trim_bytes;
	__u32 drop_bytes;
	__u32 flags;
	__u32 reserved;
};

struct port_state {
	struct bpf_spin_lock lock;
	__u32 reserved;
	__u64 vq_bytes;
	__u64 last_ns;
	__u64 offered_packets;
	__u64 offered_bytes;
	__u64 marked;
	__u64 trimmed;
	__u64 trimmed_bytes_cut;
	__u64 dropped;
	__u64 dropped_bytes;
	__u64 mrc_data_packets;
	__u64 vq_peak_bytes;
	__u64 errors;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_config);
} mrc_trim_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_state);
} mrc_trim_state SEC(".maps");

struct pkt_info {
	__u32 len;
	__u32 ipv6;          // Ethernet type is IPv6
	__u32 inner_off;     // offset of the inner IPv6 header (== ETH_HLEN without encapsulation)
	__u32 udp_off;
	__u32 hdr_len;       // bytes kept when trimmed
	__u32 mrc_data;      // an MRC WRITE-family packet with all its headers present
	__u8 tc_hi;          // first two bytes of the outermost IPv6 header
	__u8 tc_lo;
};

// Direct packet access (helper calls per field cost ~20 ns each); the headers of frames
// coming from OVS are linear, and anything shorter than the longest MRC header is pulled
// linear once so the bounds checks below see all of it.
static __always_inline int parse(struct __sk_buff *skb, struct pkt_info *pi)
{
	void *data, *end;
	__u8 *ip, *udp, *bth;
	__u32 off, hdr;
	__u8 opcode;

	pi->len = skb->len;
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	if (data + MAX_MRC_HDR > end && skb->len > (__u32)(end - data)) {
		bpf_skb_pull_data(skb, skb->len < MAX_MRC_HDR ? skb->len : MAX_MRC_HDR);
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
	}
	ip = data + ETH_HLEN;
	if ((void *)(ip + IPV6_HLEN) > end)
		return 0;
	if (*(__u16 *)(data + ETH_TYPE_OFF) != bpf_htons(ETH_P_IPV6) || (ip[0] >> 4) != IP_VERSION_6)
		return 0;
	pi->ipv6 = 1;
	pi->tc_hi = ip[0];
	pi->tc_lo = ip[1];
	off = ETH_HLEN;
	if (ip[IPV6_NEXTHDR_OFF] == NEXTHDR_IPV6) {
		off = ETH_HLEN + IPV6_HLEN;
		ip = data + off;
		if ((void *)(ip + IPV6_HLEN) > end || (ip[0] >> 4) != IP_VERSION_6)
			return 0;
	}
	if (ip[IPV6_NEXTHDR_OFF] != NEXTHDR_UDP)
		return 0;
	udp = ip + IPV6_HLEN;
	bth = udp + UDP_HLEN;
	if ((void *)(bth + BTH_LEN + METH_LEN) > end)
		return 0;
	if (*(__u16 *)(udp + UDP_DPORT_OFF) != bpf_htons(ROCE_UDP_PORT))
		return 0;
	opcode = bth[0];
	if (opcode < OP_WRITE_FIRST || opcode > OP_WRITE_ONLY_IMM)
		return 0;
	pi->inner_off = off;
	pi->udp_off = off + IPV6_HLEN;
	hdr = pi->udp_off + UDP_HLEN + BTH_LEN + METH_LEN + RETH_LEN;
	if (bth[BTH_LEN + METH_FLAGS_OFF] & METH_FLAG_TSETH)
		hdr += TSETH_LEN;
	if (opcode == OP_WRITE_LAST_IMM || opcode == OP_WRITE_ONLY_IMM)
		hdr += IMMDT_LEN;
	pi->hdr_len = hdr;
	if (hdr > pi->len)
		return 0;   // truncated: not a well-formed MRC data packet, never trimmed
	pi->mrc_data = 1;
	return 0;
}

static __always_inline int store_u16(struct __sk_buff *skb, __u32 off, __u32 value)
{
	__u16 be = bpf_htons((__u16)value);

	return bpf_skb_store_bytes(skb, off, &be, 2, 0);
}

// Cut to the headers and fix every length field that covered the cut bytes.
static __always_inline int trim_packet(struct __sk_buff *skb, struct pkt_info *pi)
{
	__u16 zero = 0;

	if (bpf_skb_change_tail(skb, pi->hdr_len, 0) < 0)
		return -1;
	if (pi->inner_off != ETH_HLEN &&
	    store_u16(skb, ETH_HLEN + IPV6_PLEN_OFF, pi->hdr_len - ETH_HLEN - IPV6_HLEN) < 0)
		return -1;
	if (store_u16(skb, pi->inner_off + IPV6_PLEN_OFF, pi->hdr_len - pi->inner_off - IPV6_HLEN) < 0)
		return -1;
	if (store_u16(skb, pi->udp_off + UDP_LEN_OFF, pi->hdr_len - pi->udp_off) < 0)
		return -1;
	if (bpf_skb_store_bytes(skb, pi->udp_off + UDP_CHECK_OFF, &zero, 2, 0) < 0)
		return -1;
	return 0;
}

SEC("tc")
int mrc_trim(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct port_config *cfg = bpf_map_lookup_elem(&mrc_trim_cfg, &key);
	struct port_state *st = bpf_map_lookup_elem(&mrc_trim_state, &key);
	struct pkt_info pi = {};
	__u64 now, delta, drain, queue, backlog, rate, thresh, enqueued;
	__u32 rnd, flags, ecn, dscp;
	int trim = 0, drop = 0, mark = 0, header_only, ect;

	thresh = 0;

	if (skb->mark == TRIM_REQUEUE_MARK) {
		skb->mark = 0;
		return TC_ACT_OK;
	}
	if (!cfg || !st)
		return TC_ACT_OK;
	parse(skb, &pi);
	flags = cfg->flags;
	rate = cfg->rate_bytes_per_s;
	ecn = pi.tc_lo >> 4 & ECN_MASK;
	ect = pi.ipv6 && (ecn == ECN_ECT1 || ecn == ECN_ECT0);
	header_only = pi.mrc_data && pi.hdr_len == pi.len;
	now = bpf_ktime_get_ns();

	bpf_spin_lock(&st->lock);
	st->offered_packets++;
	st->offered_bytes += pi.len;
	if (!(flags & CFG_CONFIGURED)) {
		bpf_spin_unlock(&st->lock);
		return TC_ACT_OK;
	}
	delta = now > st->last_ns ? now - st->last_ns : 0;
	if (now > st->last_ns)
		st->last_ns = now;
	if (delta < NS_PER_S)   // the common case: one division
		drain = rate * delta / NS_PER_S;
	else if (delta / NS_PER_S >= MAX_DRAIN_SECONDS)
		drain = ~0ULL;
	else
		drain = rate * (delta / NS_PER_S) + rate * (delta % NS_PER_S) / NS_PER_S;
	queue = st->vq_bytes > drain ? st->vq_bytes - drain : 0;
	backlog = queue + pi.len;
	enqueued = pi.len;
	if (pi.mrc_data)
		st->mrc_data_packets++;
	if ((flags & CFG_TRIM) && pi.mrc_data && !header_only && backlog > cfg->trim_bytes) {
		trim = 1;
		enqueued = pi.hdr_len;
	} else if (!header_only && backlog > cfg->drop_bytes) {
		drop = 1;
		enqueued = 0;
	}
	if (!drop && ect && (flags & CFG_MARK) && !(flags & CFG_LAST_HOP) &&
	    backlog > cfg->ecn_min_bytes) {
		if (backlog >= cfg->ecn_max_bytes)
			thresh = 1ULL << 32;
		else
			thresh = ((backlog - cfg->ecn_min_bytes) << 32) /
				 (cfg->ecn_max_bytes - cfg->ecn_min_bytes);
	}
	st->vq_bytes = queue + enqueued;
	if (st->vq_bytes > st->vq_peak_bytes)
		st->vq_peak_bytes = st->vq_bytes;
	if (trim) {
		st->trimmed++;
		st->trimmed_bytes_cut += pi.len - pi.hdr_len;
	}
	if (drop) {
		st->dropped++;
		st->dropped_bytes += pi.len;
	}
	bpf_spin_unlock(&st->lock);

	// The random draw happens outside the lock (no helper calls inside it) and only when the
	// queue is above ecn_min: mark iff rand_u32 < thresh, as in vqueue.mark_threshold.
	if (thresh) {
		rnd = bpf_get_prandom_u32();
		mark = rnd < thresh;
		if (mark)
			__sync_fetch_and_add(&st->marked, 1);
	}
	if (drop)
		return TC_ACT_SHOT;
	if (trim && trim_packet(skb, &pi) < 0) {
		__sync_fetch_and_add(&st->errors, 1);
		return TC_ACT_SHOT;
	}
	if (mark || trim) {
		__u8 tc_bytes[2];
		__u8 tclass = (pi.tc_hi & 0x0f) << 4 | pi.tc_lo >> 4;

		if (mark)
			tclass |= ECN_CE;
		if (trim) {
			dscp = (flags & CFG_LAST_HOP) ? DSCP_TRIMMED_LASTHOP : DSCP_TRIMMED;
			tclass = (__u8)(dscp << TCLASS_DSCP_SHIFT) | (tclass & ECN_MASK);
		}
		tc_bytes[0] = (pi.tc_hi & 0xf0) | tclass >> 4;
		tc_bytes[1] = (__u8)(tclass << 4) | (pi.tc_lo & 0x0f);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, tc_bytes, 2, 0) < 0) {
			__sync_fetch_and_add(&st->errors, 1);
			return TC_ACT_SHOT;
		}
	}
	if (trim) {
		skb->mark = TRIM_REQUEUE_MARK;
		return bpf_redirect(skb->ifindex, 0);
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
