/* Shrink's internals (shrink.c: the agreement's state machine and the entry points;
 * shrink_wire.c: its messages and connections; shrink_lead.c: the coordinator's side). */
#ifndef SYMCOLL_BOOTSTRAP_SHRINK_INT_H
#define SYMCOLL_BOOTSTRAP_SHRINK_INT_H

#include "bootstrap/bs_int.h"

#define SH_MAGIC 0x314b4853u /* "SHK1" */
#define SH_LABEL "symcoll shrink"
/* how often a coordinator dials the listeners of the ranks that have not joined */
#define SH_PROBE_EVERY_SEC 0.1
#define SH_MAX_REDIRECTS 16

enum sh_type { SH_JOIN = 1, SH_SEEKING, SH_COORD, SH_MEMBER_OF, SH_LATE, SH_RESULT, SH_PROBE };

typedef struct sh_msg {
    uint32_t magic;
    uint16_t type;
    uint16_t flag;   /* JOIN: the sender's flag; RESULT: the AND of the members' */
    uint64_t job_id; /* the parent's */
    int32_t from;    /* sender's rank in the parent */
    int32_t arg;     /* MEMBER_OF: the coordinator; RESULT: the number of members */
    uint64_t nonce;  /* RESULT: names the new bootstrap */
    bs_addr_t addr;  /* JOIN and RESULT: where the sender listens for the new mesh */
    uint8_t mac[BS_SHA256_LEN];
} sh_msg_t;

/* RESULT's body: one record a member, in parent order */
typedef struct sh_member {
    int32_t rank;
    int32_t reserved;
    bs_addr_t addr;
} sh_member_t;

/* a connection and the message being read from it */
typedef struct sh_conn {
    int fd;
    int rank; /* the sender, once its JOIN came; -1 before */
    size_t got;
    sh_msg_t in;
} sh_conn_t;

typedef enum { SH_SEEK, SH_MEMBER, SH_LEAD } sh_role_t;
enum { SH_ASK_UNKNOWN, SH_ASK_ANSWERED, SH_ASK_DEAD, SH_ASK_SILENT };

typedef struct sh {
    bootstrap_t *bs;
    const deadline_t *dl;
    double probe_sec, lead_sec;
    bs_addr_t mine; /* where this rank listens for the new mesh */
    sh_role_t role;
    /* SEEK and MEMBER: the rank dialled and the connection to it */
    int cand, redirects;
    sh_conn_t c;
    bool cand_connected, cand_answered;
    double cand_until;
    /* connections accepted on the repair listener, whose JOIN is awaited or, while
     * seeking, whose answer waits for this rank's role */
    sh_conn_t *in;
    int nin, maxin;
    /* LEAD: per rank of the parent, its connection once joined (-1), where it listens,
     * whether its listener refused, and the probe under way */
    int *joined;
    bs_addr_t *addr_of;
    bool *dead;
    int *probe;
    sh_conn_t *probe_in; /* the probe's answer being read (fd unused) */
    bool *probe_sent;
    double lead_since, next_probe;
    bool changed; /* the role or a connection changed in this turn: poll again first */
    bool flag;    /* this rank's flag (bootstrap_shrink) */
    /* SEEK, first: every rank below is PROBEd at once (ask[r]: SH_ASK_*), so that the
     * silent ones cost one probe window together, not one each */
    bool asking;
    double ask_until;
    signed char *ask;
    bool *flag_of; /* LEAD: each joined rank's */
} sh_t;

void sh_mac(const bootstrap_t *bs, const sh_msg_t *m, const void *body, size_t len,
            uint8_t out[BS_SHA256_LEN]);

symcoll_status_t sh_write(int fd, const void *buf, size_t len, const deadline_t *dl);

symcoll_status_t sh_send(const sh_t *s, int fd, uint16_t type, int32_t arg, uint64_t nonce,
                         const void *body, size_t len);

/* Reads what is there: 1 with a whole message in c->in, 0 for more to come, -1 for the
 * end of the connection or a message that is not the parent's. A RESULT's MAC covers its
 * body, which sh_result reads; every other message is checked here. */
int sh_read(const sh_t *s, sh_conn_t *c);

/* A non-blocking connection to rank r's repair listener: the descriptor; -1 where the
 * rank has none or refused at once (dead); -2 for a local failure (descriptors or
 * buffers short: nothing known of the rank). */
int sh_dial(const sh_t *s, int r);

/* The outcome of a non-blocking connect that polled writable: true when connected. */
bool sh_connected(int fd);

/* Drop connection i of the accepted ones. */
void sh_in_drop(sh_t *s, int i);

/* One step of PROBE conversation r, its descriptor polled ready: once connected the
 * PROBE goes out (0); then its answer is read (1: in probe_in[r].in) or is not all
 * there yet (0). -1: refused (*refused) or gone. The descriptor is closed unless 0. */
int sh_probe_step(sh_t *s, int r, bool *refused);

/* The coordinator takes accepted connection i, whose JOIN came from rank r, as r's (it
 * leaves the accepted ones: the last takes its place). */
void sh_take_member(sh_t *s, int i, int r);

/* Become the coordinator: the ranks that asked while this rank looked are answered. */
void sh_lead(sh_t *s);

/* The coordinator's probes of the ranks above it that neither joined nor refused. */
void sh_probe(sh_t *s);

/* Is the coordinator done: every rank above it joined or dead, or its window over? */
bool sh_lead_done(const sh_t *s);

/* The coordinator's RESULT to every member; the member list in *list_p. */
symcoll_status_t sh_lead_result(sh_t *s, sh_member_t **list_p, int *m_p, uint64_t *nonce_p);

/* The asking is over: its connections close (the states stay, for sh_next). */
void sh_ask_end(sh_t *s);

#endif
