/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free, for the
 * bootstrap's challenge-response; plus a comparison whose time does not depend on the
 * bytes compared. */
#ifndef SYMCOLL_BOOTSTRAP_SHA256_H
#define SYMCOLL_BOOTSTRAP_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BS_SHA256_LEN 32
#define BS_SHA256_BLOCK 64

typedef struct bs_sha256 {
    uint32_t h[8];
    uint64_t bytes; /* message bytes hashed so far */
    uint8_t buf[BS_SHA256_BLOCK];
    size_t nbuf; /* bytes waiting in buf */
} bs_sha256_t;

void bs_sha256_init(bs_sha256_t *s);
void bs_sha256_update(bs_sha256_t *s, const void *data, size_t len);
/* Writes the digest and wipes the state. */
void bs_sha256_final(bs_sha256_t *s, uint8_t out[BS_SHA256_LEN]);
void bs_sha256(const void *data, size_t len, uint8_t out[BS_SHA256_LEN]);

typedef struct bs_hmac {
    bs_sha256_t inner;
    bs_sha256_t outer;
} bs_hmac_t;

/* Any key length (longer keys are hashed first, as RFC 2104 says). */
void bs_hmac_init(bs_hmac_t *m, const void *key, size_t key_len);
void bs_hmac_update(bs_hmac_t *m, const void *data, size_t len);
/* Writes the tag and wipes the state. */
void bs_hmac_final(bs_hmac_t *m, uint8_t out[BS_SHA256_LEN]);

/* a[0..n) == b[0..n), in time that depends on n only. */
bool bs_ct_equal(const void *a, const void *b, size_t n);

/* Zero memory that held a secret (not optimised away). */
void bs_wipe(void *p, size_t n);

#endif
