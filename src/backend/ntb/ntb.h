/* SPDX-License-Identifier: MIT */
#ifndef SIO_NTB_BACKEND_H
#define SIO_NTB_BACKEND_H

/*
 * The ntb fabric backend: the window fabric (winfab/) over the Linux NTB
 * framework, through smartio_ntb's uapi (ntbdev.h). Each kernel is a node,
 * its NTB port number the node's id. What lives where:
 *
 *   each node's memory  one buffer of its own (SIO_NTB_IOC_MW_ALLOC), as
 *                       large as an inbound window, exported to every peer
 *                       through that peer's inbound window 0 (translated
 *                       into the same buffer); peers reach it through their
 *                       outbound window to it. It is the node's pool of
 *                       segments.
 *   a segment's window  where the owner's hardware driver translates page
 *                       by page: an inbound window of the owner for each
 *                       kernel connected, translated to the segment alone
 *                       (ownwin.c), or where the hardware translates
 *                       outbound, the connecting kernel's own window to the
 *                       owner; else the pool's window 0
 *   the fabric's state  at the start of one node's memory (its home: where
 *                       `smartio create` ran, or the standby that took over):
 *                       winfab's header, the registry; a copy at the start
 *                       of a standby's memory (home.c). Every node that can
 *                       host keeps that room: its pool follows it
 *   the bootstrap       four words of the home's: its last scratchpads, or
 *                       where there are none (IDT) a board its node service
 *                       sends by message register (boot.c, board.c)
 *   notifications       one doorbell bit, the highest, rung to every peer
 *   the lock            a lease among this kernel's processes, then a bakery
 *                       among the kernels in the state (no atomic operation
 *                       crosses the NTB)
 *
 * One process per kernel, the node service (`smartio ntb serve`, serve.c),
 * holds the NTB: it allocates the node's memory and translates each peer's
 * window into it as their links come up (where the hardware translates
 * outbound only, it tells the peers where the memory is and translates its
 * own outbound windows to theirs), maps the outbound windows, hosts
 * the state when asked to create a fabric, publishes the bootstrap, and
 * takes the doorbells for this kernel's waiters. The fabric's processes
 * receive its open file (SCM_RIGHTS) and map through it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "winfab/winfab.h"
#include "ntbdev.h"

#define NTB_MEM_WIDX	0	/* the inbound window of a node's memory, for every peer */
#define NTB_MIN_POOL	(1ull << 20)

/* boot.c: the words a port shows its peers (see there) */
#define NTB_W_BOOT	0	/* 4: the bootstrap */
#define NTB_W_UNREACHED	4	/* 2: the ports this one could not export to */
#define NTB_W_MEM	6	/* 3: the node's memory (outbound translation only) */
#define NTB_W_SIDE	9	/* 1: which side of a two-port NTB without port numbers */
#define NTB_WORDS	10

/*
 * The words by message, where the NTB has no scratchpads (board.c): this
 * port's, and each peer's (by index) as far as they came. A node service
 * keeps the live one; its processes get a copy with its file.
 */
struct ntb_board {
	uint32_t by_msg;			/* 1: message registers, no scratchpads */
	uint32_t own[NTB_WORDS];
	uint32_t have[SIO_NTB_MAX_PEERS];	/* each peer's words that came, a bit each */
	uint32_t w[SIO_NTB_MAX_PEERS][NTB_WORDS];
};

struct ntb_boot {
	int port;			/* the home */
	uint32_t name_hash, gen;
	uint64_t state_size;
	uint32_t widx;			/* the home's inbound window that holds it */
	int unheard;			/* -ENOENT from boot_find: peers without a
					 * link, a home perhaps among them (0 where
					 * a heard port has other words) */
};
uint32_t sio__ntb_name_hash(const char *name);

/* How often a node service looks at its NTB (serve.c), in ms. */
#define NTB_TICK_MS	100
/*
 * $SMARTIO_NTB_TAKEOVER_MS in @ns: how long a standby waits with the home's
 * link down before it takes over (default 5 s). 0, or -EINVAL naming a bad
 * value (sio__env_ms()).
 */
int sio__ntb_takeover_ns(uint64_t *ns);
/* Publish @b in this port's words, or clear them (@b NULL). */
int sio__ntb_boot_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			  const struct ntb_boot *b);
/* Publish the ports (a bit each) whose translation of this port's memory was refused. */
int sio__ntb_unreached_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			       uint64_t ports);
/* Does port @port say it could not export its memory to port @by? */
bool sio__ntb_unreached(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			int port, int by);
/* The port that hosts a fabric, as the words of this port and its peers say. */
int sio__ntb_boot_find(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
		       struct ntb_boot *out);
/* Does peer @pidx (port @port) publish a bootstrap of generation @gen? */
bool sio__ntb_boot_of_peer(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			   uint32_t pidx, int port, uint32_t gen);
/* Outbound translation: where this node's memory is, for the peers to translate to. */
int sio__ntb_mem_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 uint64_t addr, uint64_t size);
/* ... and where peer @pidx's is: 0, or -ENOENT while it has not said. */
int sio__ntb_mem_of_peer(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 uint32_t pidx, uint64_t *addr, uint64_t *size);

/* Two-port NTB without port numbers: this side's word (boot.c), and the peer's (0: none yet). */
int sio__ntb_side_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			  uint32_t word);
uint32_t sio__ntb_side_of_peer(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd);

/* board.c: the node service's side of the board */
struct ntb_post {
	uint32_t sent[NTB_WORDS];		/* own words as last sent to everyone */
	uint32_t dirty[SIO_NTB_MAX_PEERS];	/* words to send each peer, a bit each */
	uint32_t hi[SIO_NTB_MAX_PEERS][NTB_WORDS], hi_have[SIO_NTB_MAX_PEERS];
	uint64_t gen[SIO_NTB_MAX_PEERS];	/* the peer's link generation its words are of */
	uint64_t asked[SIO_NTB_MAX_PEERS];	/* when its words were last asked for */
	uint64_t refresh;			/* when everything is sent again */
};
/* Set @bd up for the device: by message where there are no scratchpads. */
int sio__ntb_board_init(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd);
/* A tick: take the peers' messages, send them what changed (bounded). */
void sio__ntb_board_post(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 struct ntb_post *p);

/* What a node service tells the processes of its kernel (with its file). */
struct ntb_node {
	int port;			/* this kernel's NTB port: its node */
	int fake_port;			/* >= 0: the fake's port */
	uint32_t mem_pidx, mem_widx;	/* the node's memory: the buffer of this inbound window */
	uint64_t mem_size, mem_dma;	/* its size and bus address */
	uint64_t epoch;			/* new at every start of the service */
	char what[96];			/* the device */
	int32_t seg_windows;		/* windows per peer for segments alone (ownwin.c), 0: none */
	uint32_t xlat_align;		/* the hardware driver's translation alignment, KiB */
	uint64_t reached;		/* outbound translation: the ports whose memory this node's windows reach */
	uint32_t sided;			/* 0, or a two-port NTB without port numbers: this side's id + 1 */
	struct ntb_board board;		/* the words by message (a copy, to a process) */
	/*
	 * To a process (HELLO): while adapter 0's link with the home is down
	 * and the service reads the fabric's header through a further NTB
	 * (serve.c's state_through()), that adapter and the bootstrap the
	 * service joined by, for the process to join through it; 0 else.
	 */
	int32_t via_a;
	struct ntb_boot via;
	uint64_t reach0;		/* to a process: its pool's reach0, as the service has it */
};

/* serve.c: the node service in this process, if it runs here */
struct ntb_service;
struct ntb_service *sio__ntb_service_here(void);
/* Its NTB, and in @more (NULL: not wanted) its further ones: the service's, not to close. */
struct ntbdev *sio__ntb_service_dev(struct ntb_service *sv, struct ntb_node *node,
				    struct ntbdev **more);
/* Why it holds back from taking over a home that is alive, or "" (@len > 0). */
void sio__ntb_service_note(const struct ntb_service *sv, char *msg, size_t len);

/* client.c: reach this kernel's node service: its device and node */
/*
 * @more (NULL: not wanted): the node's further NTBs, adapters 1 and up, as
 * the service holds them (SIO_MAX_ADAPTERS - 1 entries, NULL where none).
 */
int sio__ntb_node_connect(const char *spec, int fake_port, uint32_t op, const char *name,
			  struct ntbdev **dev, struct ntbdev **more, struct ntb_node *node,
			  uint32_t *gen);
#define NTB_OP_HELLO	1
#define NTB_OP_CREATE	2
#define NTB_OP_POKE	3	/* no answer: look at the fabric's requests now */
#define NTB_OP_BOARD	4	/* the node as now (its board), and no NTB file */
/* The words this kernel's node service has heard by message, as now (board.c),
 * and in @note (@len > 0) why it holds back from a take-over, or "". */
int sio__ntb_node_board(const char *spec, int fake_port, struct ntb_board *out, char *note,
			size_t len);
/* Wake this kernel's node service (best effort): a request in the fabric's state waits for it. */
void sio__ntb_node_poke(int fake_port);

/* The protocol between the node service and the processes (a unix socket). */
#define NTB_PROTO_MAGIC	0x4e425453u	/* "STBN" */
struct ntb_req {
	uint32_t magic, op;
	char name[SIO_NAME_MAX];
};
struct ntb_rep {
	uint32_t magic;
	int32_t err;			/* 0, or the errno of @msg */
	char msg[256];
	struct ntb_node node;
	uint32_t gen;			/* CREATE: the new fabric's generation */
	int32_t adapters;		/* HELLO: the NTB files passed, adapter 0's first */
	char more[SIO_MAX_ADAPTERS - 1][96];	/* the further NTBs' (ntbdev.spec) */
};

/* ntb.c: the window source */
struct peer_map {				/* a mapping of a peer's window */
	struct peer_map *next;
	void *va;			/* page aligned */
	uint64_t len, off;		/* its mmap() offset */
	int port;
	int widx;			/* a segment's own window (ownwin.c), -1: the pool's */
	bool state;			/* of the state: follows the home (home.c), at @soff in it */
	uint64_t soff;
	int why;			/* a connection through the pool: why (an errno), 0: none */
	int adapter;			/* the NTB it is mapped through (ntbsrc.adev) */
	uint64_t gen;			/* adapter > 0: the peer's link generation it maps */
};

struct ntb_bar;

struct ntbsrc {
	struct ntbdev *dev;
	bool own_dev;			/* ours to close, @adev too (not the node service's) */
	/*
	 * The node's NTB of each adapter, as its service passed them: [0] is
	 * @dev; a further one NULL where the service holds none. Mappings
	 * through a further NTB are a segment's, on a path through its
	 * adapter, or the state's, while adapter 0's link with the home is
	 * down (@state_a, ntb.c's state_route()).
	 */
	struct ntbdev *adev[SIO_MAX_ADAPTERS];
	int state_a;			/* the adapter whose NTB the state's mappings ride */
	uint64_t home_reach1;		/* the home's pool's reach1, as last read */
	struct sio_ntb_info info;
	struct ntb_node node;
	struct ntb_boot boot;
	bool created;			/* this handle made the fabric: its detach publishes it */
	int bit;			/* the fabric's doorbell bit */
	struct wf_lock *local;		/* this kernel's lock, on a page of this host */
	pthread_mutex_t mu;		/* @maps, @peer_gen, @bars */
	struct peer_map *maps;
	uint64_t peer_gen[WF_MAX_POOLS];
	uint64_t state_gen[WF_MAX_POOLS];	/* @peer_gen of the state's mappings */
	bool resumed[WF_MAX_POOLS];	/* its windows mapped again by sio_link_resume() alone */
	uint64_t link_gen;
	struct ntbdev *xdev;		/* this process's own file: its windows onto BARs */
	struct ntb_bar *bars;
	/* home.c: the whole state of the home, the standby's copy (its port) */
	pthread_mutex_t home_mu;	/* these five: the unlocking thread's, the heartbeat's */
	void *whole, *sb;
	void *stage;			/* the pages to copy, then a byte per page: differs */
	int sb_port;
	uint32_t home_epoch;		/* the take-overs this handle followed */
	bool orphaned;			/* its home yielded to a state without this process */
};

static inline struct ntbsrc *src_of(struct wf_fabric *s)
{
	return s->priv;
}

int sio__ntb_port_default(void);
/* Inbound window @w of port @port as this port reaches it: mmap() offset and size. */
int sio__ntb_window_of(struct ntbsrc *n, int port, uint32_t w, uint64_t *off, uint64_t *size);
/* mmap() @len bytes at @off of the node service's file (a peer's window: mapped again after a link loss). */
int sio__ntb_map_at(struct ntbsrc *n, int port, uint64_t off, uint64_t len, bool rdonly, void **va);
/*
 * Bytes [@at, @at + @len) of port @port's memory through the NTB of adapter
 * @a (1 and up): 0, or -EHOSTUNREACH where this process holds no such NTB
 * or port @port does not export its memory through it (the caller takes
 * adapter 0's way), or the error of the map, said.
 */
int sio__ntb_map_via(struct wf_fabric *s, int a, int port, uint64_t at, uint64_t len, bool rdonly,
		     void **va);

/*
 * ownwin.c: a segment's own window, where the hardware driver translates
 * page by page (struct wf_ownwin): the connecting process's side, and the
 * owner's node service's.
 */
#define NTB_OWNWIN_MAX	32	/* windows per peer for segments, at most */
struct ntb_ownwins {
	uint32_t per_peer;		/* windows 1 .. per_peer of each peer; 0: the pool only */
	uint64_t align;			/* the driver's translation alignment (0: not known yet) */
	uint64_t size_max;		/* its largest translation */
	/*
	 * NULL, or where the hardware translates outbound only: the device,
	 * whose connecting kernel translates an outbound window of its own
	 * to the owner's segment (its service answers, not the owner's)
	 */
	const struct sio_ntb_info *outbound;
	int16_t holder[SIO_NTB_MAX_PEERS][NTB_OWNWIN_MAX + 1];	/* by peer index, window: entry + 1 */
	/* what each window translates now (0 bytes: nothing), as this service made it */
	uint64_t at[SIO_NTB_MAX_PEERS][NTB_OWNWIN_MAX + 1];
	uint64_t len[SIO_NTB_MAX_PEERS][NTB_OWNWIN_MAX + 1];
};
/* What the hardware driver allows, from inbound window 1 of peer @pidx (its link up). */
void sio__ntb_ownwin_probe(struct ntbdev *d, const struct sio_ntb_info *i, uint32_t pidx,
		    struct ntb_ownwins *x);
/* The node service: answer this node's requests, clear what no connection uses; true: rang. */
bool sio__ntb_ownwin_serve(struct sio_fabric *f, struct ntbdev *d, struct ntb_node *node,
		    struct ntb_ownwins *x);
/* The node service leaves its fabric: every window it translated for segments, cleared. */
void sio__ntb_ownwin_reset(struct ntbdev *d, struct ntb_ownwins *x);
/* $SMARTIO_NTB_XLAT_MS in @ns (sio__env_ms()): 0, or -EINVAL naming a bad value. */
int sio__ntb_ownwin_wait_check(uint64_t *ns);
int sio__ntb_seg_connect(struct sio_fabric *f, int slot, int adapter, uint64_t off, uint64_t len,
			  bool rdonly, void **va);
const char *sio__ntb_seg_reach(struct sio_fabric *f, int slot, const void *va, char *buf, size_t len);

/* Where a node's pool starts in its memory: past room for the state, where it can host one. */
uint64_t sio__ntb_pool_off(const struct ntb_node *node);
/* Port @port's memory: its mmap() offset through our file, and its size. */
int sio__ntb_mem_of(struct ntbsrc *n, int port, uint64_t *off, uint64_t *size);

/*
 * home.c: the standby home. A holder of the registry lock copies the state
 * to the standby before it unlocks; the heartbeat thread follows a take-over
 * (the state's mappings moved, in place, onto the new home); the node
 * service claims the standby's role, takes over, drops a dead standby.
 */
void sio__ntb_mirror_push(struct wf_fabric *s);
/* Map the first @len bytes of port @port's memory (a standby's copy of the state). */
int sio__ntb_map_copy(struct wf_fabric *s, int port, uint64_t len, void **va);
void sio__ntb_home_follow(struct wf_fabric *s);
/*
 * Is the state in reach (0)? Else why not, as this process sees the home
 * and the standby it follows (-EHOSTDOWN, said): the home's link down (its
 * mapping reads all ones, or on a fake NTB what the dead home left), the
 * state gone.
 */
int sio__ntb_home_check(struct sio_fabric *f);
/* Peer @port's link on @d: up, and its generation in *@gen. */
bool sio__ntb_peer_link(struct ntbdev *d, int port, uint64_t *gen);
/* The adapter whose NTB @f's mappings of the state ride: 0, or a further one (ntb.c). */
int sio__ntb_state_adapter(struct sio_fabric *f);
/* The node service of port @me, memory @mem, joined to @f: true if it took over. */
bool sio__ntb_home_take(struct sio_fabric *f, struct ntbdev *d, void *mem, int me, char *msg,
			size_t len);
/*
 * Two homes of one fabric: this node (port @me) hosts @mine, port @port says
 * it hosts @theirs. The higher epoch stays the home, then the lower port.
 * 1: this node yields, 0: @port does, -1: not the same fabric; @msg says it.
 */
int sio__ntb_home_rule(const struct wf_hdr *mine, int me, const struct wf_hdr *theirs, int port,
		       char *msg, size_t len);
/* The home's service yields: its state, in @mem, names port @to the home. */
void sio__ntb_home_yield(void *mem, int to);
/* The service of a node that can host: be the standby where there is none (1: now it is). */
int sio__ntb_standby_claim(struct sio_fabric *f, int me);
/* The fabric destroyed: its standby's copy is no fabric either. */
void sio__ntb_standby_void(struct wf_fabric *s);
/* The home's service: a standby whose link is down is none (its port: it was dropped). */
int sio__ntb_standby_drop(struct sio_fabric *f, struct ntbdev *d);

/*
 * adapters.c: a node's NTBs as its adapters (adapter 0: the node service's,
 * 1 and up: further NTBs of the host to the same peers), each NTB's links
 * written into the core as its adapter's link state, for this node.
 */
struct ntb_adapters {
	int n;					/* NTBs: adapter 0's and the others */
	struct ntbdev *dev[SIO_MAX_ADAPTERS];	/* [0]: the node service's, not closed here */
	uint64_t ports[SIO_MAX_ADAPTERS];	/* the ports each has its link up with */
	uint64_t exported[SIO_MAX_ADAPTERS];	/* peers (by index) whose window 0 reaches the node's memory */
	uint64_t reach[SIO_MAX_ADAPTERS];	/* ... the same peers, by port */
	uint64_t refused[SIO_MAX_ADAPTERS];	/* peers whose translation was refused (said once) */
	uint64_t same[SIO_MAX_ADAPTERS];	/* peers whose memory it reaches as adapter 0's NTB does */
	uint64_t zero[SIO_MAX_ADAPTERS];	/* ... all zero so far: looked at again */
	uint64_t looked[SIO_MAX_ADAPTERS];	/* peers compared, at the link generation below */
	uint64_t gen[SIO_MAX_ADAPTERS][SIO_NTB_MAX_PEERS];	/* the peer's link compared at */
};
/* Open the NTBs of @more ("DEV1[,DEV2...]", may be NULL) for adapters 1 and up: each of port @port. */
int sio__ntb_adapters_open(struct ntb_adapters *x, struct ntbdev *first, const char *more, int port);
void sio__ntb_adapters_close(struct ntb_adapters *x);
/* Bring one of node @me's adapters in @f in line with its NTB's links: 1 (@msg says which), or 0. */
int sio__ntb_adapters_follow(struct ntb_adapters *x, struct sio_fabric *f, int me, char *msg,
			     size_t len);
/* The first adapter from 1 on whose NTB has its link up with @port; -1 if none. */
int sio__ntb_adapters_reach(struct ntb_adapters *x, int port);
/*
 * Export node @me's memory (@size bytes at bus address @dma, a buffer of
 * adapter 0's NTB) through window 0 of each peer of the further NTBs, and
 * compare what each reaches of a peer's memory with what adapter 0's does:
 * 1 when @msg says something new, else 0.
 */
int sio__ntb_adapters_export(struct ntb_adapters *x, int me, uint64_t dma, uint64_t size,
			     char *msg, size_t len);
/* The first @len bytes (4096 at most) of port @port's memory through adapter @a's NTB. */
int sio__ntb_adapters_peek(struct ntb_adapters *x, int a, int port, void *buf, size_t len);

/* bar.c: windows onto the BARs of this host's devices, for the other kernels */
int sio__ntb_bar_export(struct wf_fabric *s, struct wf_dev *d, uint64_t bus, uint64_t size);
void sio__ntb_bar_unexport(struct wf_fabric *s, struct wf_dev *d);
int sio__ntb_bar_map(struct wf_fabric *s, const struct wf_dev *d, int node, uint64_t size, void **va);
/* Heartbeat thread, mutex held: peers whose link came up get the windows too. */
void sio__ntb_bar_refresh(struct ntbsrc *n);
void sio__ntb_bar_drop(struct ntbsrc *n);

#endif
