/* The manifest format for an input, chosen by content (manifest.h). */
#include "readers/manifest.h"

/* Adding a manifest format: its ops in its own file, listed here. */
static const es_manifest_ops *const manifests[] = {
    &es_manifest_rawlist,
    &es_manifest_kaldi,
};

const es_manifest_ops *es_manifest_for(int is_dir, const uint8_t *head, size_t n)
{
    const es_manifest_ops *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; i < sizeof manifests / sizeof manifests[0]; i++) {
        int b = manifests[i]->bid(is_dir, head, n);
        if (b > best_bid) {
            best_bid = b;
            best = manifests[i];
        }
    }
    return best;
}
