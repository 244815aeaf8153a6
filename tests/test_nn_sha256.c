/*
 * test_nn_sha256.c — the nn module's SHA-256 (parameter hashes, checkpoint
 * trailers) against the FIPS 180-4 / NIST example vectors, fed in one piece
 * and in uneven pieces, and the hex formatting.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nn/nn_int.h"

static int digest_is(const void *msg, size_t n, const char *hex_want)
{
    uint8_t d[32];
    char hex[65];
    oc_nn_sha256(msg, n, d);
    oc_nn_sha256_hex(d, hex);
    if (strcmp(hex, hex_want) != 0) {
        fprintf(stderr, "  sha256 of %zu bytes: %s, want %s\n", n, hex, hex_want);
        return 0;
    }
    /* the same digest when fed in pieces of 1, 2, 3, ... bytes */
    struct oc_nn_sha256 s;
    oc_nn_sha256_init(&s);
    const uint8_t *p = msg;
    size_t off = 0;
    for (size_t k = 1; off < n; k++) {
        size_t take = k < n - off ? k : n - off;
        oc_nn_sha256_update(&s, p + off, take);
        off += take;
    }
    uint8_t d2[32];
    oc_nn_sha256_final(&s, d2);
    return memcmp(d, d2, 32) == 0;
}

OC_TEST(nist_vectors)
{
    OC_CHECK(digest_is("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    OC_CHECK(
        digest_is("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    OC_CHECK(digest_is(m448, strlen(m448),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    const char *m896 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmno"
        "pqklmnopqrlmnopqrsmnopqrstnopqrstu";
    OC_CHECK(digest_is(m896, strlen(m896),
                       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    OC_CHECK(digest_is(million, 1000000,
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    free(million);
}

OC_TEST(padding_boundaries_differ)
{
    /* lengths around the 55/56/64-byte padding edges give distinct digests */
    uint8_t buf[130], d[130][32];
    memset(buf, 0x5a, sizeof(buf));
    for (size_t n = 0; n < 130; n++)
        oc_nn_sha256(buf, n, d[n]);
    int distinct = 1;
    for (size_t a = 0; a < 130; a++)
        for (size_t b = a + 1; b < 130; b++)
            if (memcmp(d[a], d[b], 32) == 0)
                distinct = 0;
    OC_CHECK(distinct);
}

OC_TEST_MAIN()
