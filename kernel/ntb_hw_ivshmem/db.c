// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: doorbells, scratchpads and interrupts.
 *
 * A doorbell bit of port R rung by port S is a pair of counters in R's slot:
 * db_set[S][bit], which only S writes (one more per ring), and
 * db_ack[S][bit], which only R writes (the db_set value it cleared). The bit
 * is pending while they differ, so no store of one guest can undo another's
 * and no atomic operation crosses guests. A ring then writes ivshmem's
 * Doorbell register, which the ivshmem server turns into an MSI-X interrupt
 * of R's function (vector bit % vectors).
 *
 * Only rings of a peer whose link is up here count. The two sides of a link
 * see it come up at different moments (each polls the other's heartbeat), so
 * a peer may ring before this port sees the link: that ring waits, and is
 * delivered when the link comes up here, as hardware would deliver it once
 * the link was trained. Rings that counted when a link went down stay
 * pending until cleared, as in a doorbell register; rings of a peer's
 * earlier life (it restarted) are dropped. A port rings only the peers whose
 * link it sees up.
 *
 * As on multi-port NTB hardware with a global doorbell (IDT), the framework's
 * peer_db_set() names no peer: the bits go to every peer, each of which
 * masks the bits that are not its own (ntb_perf and ntb_pingpong use the
 * bit of the destination's global index or port number).
 */
#include <linux/bitmap.h>
#include <linux/interrupt.h>

#include "ntb_hw_ivshmem.h"

/* events per vector per delivery, at most */
#define IVNTB_DB_EVENTS_MAX	32

static inline u32 shm_rd(__le32 *p)
{
	return le32_to_cpu(READ_ONCE(*p));
}

static inline void shm_wr(__le32 *p, u32 v)
{
	WRITE_ONCE(*p, cpu_to_le32(v));
}

/* Interrupt port @port's function on MSI-X vector @vector. */
void ivntb_ring(struct ivntb_dev *iv, int port, int vector)
{
	writel(((u32)port << 16) | vector, iv->regs + IVSHMEM_DOORBELL);
}

static u64 ivntb_vector_bits(struct ivntb_dev *iv, int vector)
{
	u64 bits = 0;
	int b;

	for (b = vector; b < IVNTB_DB_BITS; b += iv->nvec)
		bits |= BIT_ULL(b);
	return bits;
}

/* The rings of @port's bit @b that count now (db_lock held). */
static u32 ivntb_db_counted(struct ivntb_dev *iv, int port, int b)
{
	if (iv->db_up & BIT(port))
		return shm_rd(&iv->slot->db_set[port][b]);
	return iv->db_vis[port][b];
}

/* The bits with rings not cleared yet (db_lock held). */
static u64 __ivntb_db_pending(struct ivntb_dev *iv)
{
	struct ivntb_slot *s = iv->slot;
	u64 bits = 0;
	int p, b;

	for (p = 0; p < iv->ports; p++)
		for (b = 0; b < IVNTB_DB_BITS; b++)
			if (ivntb_db_counted(iv, p, b) !=
			    shm_rd(&s->db_ack[p][b]))
				bits |= BIT_ULL(b);
	return bits;
}

static u64 ivntb_db_pending(struct ivntb_dev *iv)
{
	unsigned long flags;
	u64 bits;

	spin_lock_irqsave(&iv->db_lock, flags);
	bits = __ivntb_db_pending(iv);
	spin_unlock_irqrestore(&iv->db_lock, flags);
	return bits;
}

/* The rings of bit @b that count, all ports together (db_lock held). */
static u32 ivntb_db_rung(struct ivntb_dev *iv, int b)
{
	u32 sum = 0;
	int p;

	for (p = 0; p < iv->ports; p++)
		sum += ivntb_db_counted(iv, p, b);
	return sum;
}

/* Every ring so far has been told (or dropped): start counting from here. */
static void ivntb_db_resync(struct ivntb_dev *iv)
{
	int b;

	for (b = 0; b < IVNTB_DB_BITS; b++)
		iv->db_told[b] = ivntb_db_rung(iv, b);
}

/* The link with @port came up or went down here (link.c). */
void ivntb_db_link(struct ivntb_dev *iv, int port, bool up)
{
	unsigned long flags;
	int b;

	spin_lock_irqsave(&iv->db_lock, flags);
	if (up) {
		WRITE_ONCE(iv->db_up, iv->db_up | BIT(port));
	} else {
		for (b = 0; b < IVNTB_DB_BITS; b++)
			iv->db_vis[port][b] =
				shm_rd(&iv->slot->db_set[port][b]);
		WRITE_ONCE(iv->db_up, iv->db_up & ~BIT(port));
	}
	spin_unlock_irqrestore(&iv->db_lock, flags);
	if (up)
		/* the rings that waited for the link */
		schedule_work(&iv->db_work);
}

/* @port restarted: its rings of before are dropped. */
void ivntb_db_forget(struct ivntb_dev *iv, int port)
{
	struct ivntb_slot *s = iv->slot;
	unsigned long flags;
	int b;

	spin_lock_irqsave(&iv->db_lock, flags);
	for (b = 0; b < IVNTB_DB_BITS; b++) {
		iv->db_vis[port][b] = shm_rd(&s->db_set[port][b]);
		shm_wr(&s->db_ack[port][b], iv->db_vis[port][b]);
	}
	ivntb_db_resync(iv);
	spin_unlock_irqrestore(&iv->db_lock, flags);
}

/*
 * The events vector @v owes the client (db_lock held): one per ring of its
 * unmasked bits since the last delivery, and one if such a bit is pending
 * with no new ring (unmasked, or waiting for the link). Rings are not merged
 * into one event as a doorbell register would merge them: ntb_perf takes one
 * command per event, and two peers that ring together would leave one
 * command unread until the next ring.
 */
static unsigned int ivntb_db_owed(struct ivntb_dev *iv, int v, u64 pending)
{
	u64 bits = ivntb_vector_bits(iv, v), live = bits & ~iv->db_mask;
	DECLARE_BITMAP(map, 64);
	unsigned int n = 0;
	int b;

	bitmap_from_u64(map, bits);
	for_each_set_bit(b, map, IVNTB_DB_BITS) {
		u32 rung = ivntb_db_rung(iv, b);

		if (live & BIT_ULL(b))
			n += rung - iv->db_told[b];
		iv->db_told[b] = rung;
	}
	if (!n && (pending & live))
		n = 1;
	return min_t(unsigned int, n, IVNTB_DB_EVENTS_MAX);
}

/* Tell the client of its doorbells, vector @vector's (all of them: -1). */
static void ivntb_db_deliver(struct ivntb_dev *iv, int vector)
{
	unsigned int owed[IVNTB_MAX_VECTORS] = { };
	unsigned long flags;
	u64 pending;
	int v;

	spin_lock_irqsave(&iv->db_lock, flags);
	pending = __ivntb_db_pending(iv);
	for (v = 0; v < iv->nvec; v++)
		if (vector < 0 || v == vector)
			owed[v] = ivntb_db_owed(iv, v, pending);
	spin_unlock_irqrestore(&iv->db_lock, flags);
	for (v = 0; v < iv->nvec; v++)
		while (owed[v]--)
			ntb_db_event(&iv->ntb, v);
}

/* Events that no interrupt brings: a local ring, pending bits unmasked. */
static void ivntb_db_work(struct work_struct *work)
{
	ivntb_db_deliver(container_of(work, struct ivntb_dev, db_work), -1);
}

void ivntb_db_init(struct ivntb_dev *iv)
{
	int p, b;

	spin_lock_init(&iv->db_lock);
	/* masked until a client unmasks, as after a reset */
	iv->db_valid = iv->prof->db_valid;
	/* EPF's masks do nothing: its bits are never masked */
	iv->db_mask = iv->prof->db_mask_noop ? 0 : iv->db_valid;
	iv->db_up = BIT(iv->port);
	for (p = 0; p < IVNTB_MAX_PORTS; p++)
		for (b = 0; b < IVNTB_DB_BITS; b++)
			iv->db_vis[p][b] = shm_rd(&iv->slot->db_ack[p][b]);
	ivntb_db_resync(iv);
	INIT_WORK(&iv->db_work, ivntb_db_work);
}

static irqreturn_t ivntb_isr(int irq, void *data)
{
	struct ivntb_vec *vec = data;
	struct ivntb_dev *iv = vec->iv;

	rmb();	/* the counters the ringing port wrote before the interrupt */
	ivntb_db_deliver(iv, vec->vector);
	if (iv->prof->msgs)
		ivntb_msg_kick(iv);	/* a message rings too */
	ivntb_link_kick(iv);	/* a peer's link change rings too */
	return IRQ_HANDLED;
}

int ivntb_irq_init(struct ivntb_dev *iv)
{
	struct pci_dev *pdev = iv->pdev;
	int v, ret;

	ret = pci_alloc_irq_vectors(pdev, 1, iv->prof->db_vectors,
				    PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "cannot enable MSI-X: %d\n", ret);
		return ret;
	}
	iv->nvec = ret;
	for (v = 0; v < iv->nvec; v++) {
		iv->vec[v].iv = iv;
		iv->vec[v].vector = v;
		ret = pci_request_irq(pdev, v, ivntb_isr, NULL, &iv->vec[v],
				      "%s-%d", IVNTB_NAME, v);
		if (ret) {
			dev_err(&pdev->dev,
				"cannot take MSI-X vector %d: %d\n", v, ret);
			goto err;
		}
	}
	return 0;
err:
	while (v--)
		pci_free_irq(pdev, v, &iv->vec[v]);
	pci_free_irq_vectors(pdev);
	return ret;
}

void ivntb_irq_fini(struct ivntb_dev *iv)
{
	int v;

	for (v = 0; v < iv->nvec; v++)
		pci_free_irq(iv->pdev, v, &iv->vec[v]);
	pci_free_irq_vectors(iv->pdev);
	cancel_work_sync(&iv->db_work);
}

int ivntb_db_is_unsafe(struct ntb_dev *ntb)
{
	return 0;
}

u64 ivntb_db_valid_mask(struct ntb_dev *ntb)
{
	return to_ivntb(ntb)->db_valid;
}

int ivntb_db_vector_count(struct ntb_dev *ntb)
{
	return to_ivntb(ntb)->nvec;
}

u64 ivntb_db_vector_mask(struct ntb_dev *ntb, int vector)
{
	struct ivntb_dev *iv = to_ivntb(ntb);

	if (vector >= 0 && vector < iv->nvec)
		return ivntb_vector_bits(iv, vector) & iv->db_valid;
	dev_err_ratelimited(&iv->pdev->dev,
			    "db_vector_mask: no vector %d of %d\n",
			    vector, iv->nvec);
	return 0;
}

u64 ivntb_db_read(struct ntb_dev *ntb)
{
	return ivntb_db_pending(to_ivntb(ntb));
}

static int ivntb_db_check(struct ivntb_dev *iv, u64 bits, const char *what)
{
	if (!(bits & ~iv->db_valid))
		return 0;
	dev_err_ratelimited(&iv->pdev->dev,
			    "%s: doorbell bits %#llx beyond the valid %#llx\n",
			    what, bits, iv->db_valid);
	return -EINVAL;
}

/*
 * The bits a peer_db_set() or db_clear() of @bits takes, as the profile's
 * driver takes them: AMD's and Switchtec's write the register without a
 * check (invalid bits do nothing), EPF's rings the lowest bit alone.
 */
static int ivntb_db_bits(struct ivntb_dev *iv, u64 *bits, bool ring,
			 const char *what)
{
	if (iv->prof->db_unchecked)
		*bits &= iv->db_valid;
	if (ring && iv->prof->db_lowest_only && *bits)
		*bits &= -*bits;
	return ivntb_db_check(iv, *bits, what);
}

/* Count one ring of @bits from this port in port @port's slot. */
static void ivntb_db_count(struct ivntb_dev *iv, int port, u64 bits)
{
	struct ivntb_slot *s = ivntb_slot_of(iv, port);
	DECLARE_BITMAP(map, 64);
	int b;

	bitmap_from_u64(map, bits);
	for_each_set_bit(b, map, IVNTB_DB_BITS)
		shm_wr(&s->db_set[iv->port][b],
		       shm_rd(&s->db_set[iv->port][b]) + 1);
}

/*
 * Ring this port's own doorbell (ntb_tool's "db" file, a client's
 * self-test).
 */
int ivntb_db_set(struct ntb_dev *ntb, u64 bits)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;
	int ret = ivntb_db_check(iv, bits, "db_set");

	if (ret)
		return ret;
	spin_lock_irqsave(&iv->db_lock, flags);
	ivntb_db_count(iv, iv->port, bits);
	spin_unlock_irqrestore(&iv->db_lock, flags);
	schedule_work(&iv->db_work);
	return 0;
}

int ivntb_db_clear(struct ntb_dev *ntb, u64 bits)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	struct ivntb_slot *s = iv->slot;
	DECLARE_BITMAP(map, 64);
	unsigned long flags;
	int ret = ivntb_db_bits(iv, &bits, false, "db_clear");
	int p, b;

	if (ret)
		return ret;
	bitmap_from_u64(map, bits);
	spin_lock_irqsave(&iv->db_lock, flags);
	for (p = 0; p < iv->ports; p++)
		for_each_set_bit(b, map, IVNTB_DB_BITS)
			shm_wr(&s->db_ack[p][b], ivntb_db_counted(iv, p, b));
	spin_unlock_irqrestore(&iv->db_lock, flags);
	return 0;
}

u64 ivntb_db_read_mask(struct ntb_dev *ntb)
{
	return READ_ONCE(to_ivntb(ntb)->db_mask);
}

/* Mask @set, unmask @clear. */
static int ivntb_db_mask(struct ivntb_dev *iv, u64 set, u64 clear,
			 const char *what)
{
	unsigned long flags;
	int ret = ivntb_db_check(iv, set | clear, what);

	if (ret || iv->prof->db_mask_noop)
		return ret;
	spin_lock_irqsave(&iv->db_lock, flags);
	WRITE_ONCE(iv->db_mask, (iv->db_mask | set) & ~clear);
	spin_unlock_irqrestore(&iv->db_lock, flags);
	/* rings that came while masked are delivered now, not lost */
	if (ivntb_db_pending(iv) & clear)
		schedule_work(&iv->db_work);
	return 0;
}

int ivntb_db_set_mask(struct ntb_dev *ntb, u64 bits)
{
	return ivntb_db_mask(to_ivntb(ntb), bits, 0, "db_set_mask");
}

int ivntb_db_clear_mask(struct ntb_dev *ntb, u64 bits)
{
	return ivntb_db_mask(to_ivntb(ntb), 0, bits, "db_clear_mask");
}

/* Ring @bits at every peer whose link is up (see the comment at the top). */
int ivntb_peer_db_set(struct ntb_dev *ntb, u64 bits)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;
	int ret = ivntb_db_bits(iv, &bits, true, "peer_db_set");
	int port, v;
	u32 to;

	if (ret)
		return ret;
	/* the client's data (scratchpads, windows) before the rings count */
	wmb();
	spin_lock_irqsave(&iv->db_lock, flags);
	to = iv->db_up & ~BIT(iv->port);
	for (port = 0; port < iv->ports; port++)
		if (to & BIT(port))
			ivntb_db_count(iv, port, bits);
	spin_unlock_irqrestore(&iv->db_lock, flags);
	wmb();	/* the counts precede the interrupt */
	for (port = 0; port < iv->ports; port++) {
		if (!(to & BIT(port)))
			continue;
		for (v = 0; v < iv->nvec; v++)
			if (bits & ivntb_vector_bits(iv, v))
				ivntb_ring(iv, port, v);
	}
	return 0;
}

int ivntb_spad_is_unsafe(struct ntb_dev *ntb)
{
	return 0;
}

int ivntb_spad_count(struct ntb_dev *ntb)
{
	return to_ivntb(ntb)->spads;
}

static __le32 *ivntb_spad(struct ivntb_dev *iv, int pidx, int sidx,
			  const char *what)
{
	int port = pidx < 0 ? iv->port : ivntb_pidx_port(iv, pidx);

	if (sidx < 0 || sidx >= iv->spads || pidx >= ivntb_peer_count(iv)) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "%s: scratchpad %d of peer %d: %d scratchpads, %d peers\n",
				    what, sidx, pidx, iv->spads,
				    ivntb_peer_count(iv));
		return NULL;
	}
	return &ivntb_slot_of(iv, port)->spad[sidx];
}

u32 ivntb_spad_read(struct ntb_dev *ntb, int sidx)
{
	__le32 *sp = ivntb_spad(to_ivntb(ntb), -1, sidx, "spad_read");

	return sp ? shm_rd(sp) : 0;
}

int ivntb_spad_write(struct ntb_dev *ntb, int sidx, u32 val)
{
	__le32 *sp = ivntb_spad(to_ivntb(ntb), -1, sidx, "spad_write");

	if (!sp)
		return -EINVAL;
	shm_wr(sp, val);
	return 0;
}

u32 ivntb_peer_spad_read(struct ntb_dev *ntb, int pidx, int sidx)
{
	__le32 *sp = pidx < 0 ? NULL :
		     ivntb_spad(to_ivntb(ntb), pidx, sidx, "peer_spad_read");

	return sp ? shm_rd(sp) : 0;
}

int ivntb_peer_spad_write(struct ntb_dev *ntb, int pidx, int sidx, u32 val)
{
	__le32 *sp = pidx < 0 ? NULL :
		     ivntb_spad(to_ivntb(ntb), pidx, sidx, "peer_spad_write");

	if (!sp)
		return -EINVAL;
	shm_wr(sp, val);
	return 0;
}
