/* Hard-link members (tar typeflag '1', "u2.txt links to u1.txt"), read as
 * Python's tarfile reads them (TarFile.extractfile, random-access mode "r:*"):
 * the link's data is that of the last member before it whose name is the
 * link's target (names compared as os.path.normpath leaves them: "./" and
 * doubled slashes dropped); a link to a link is followed in turn. A target
 * that no earlier member names is an error, as tarfile's KeyError is.
 *
 * libarchive reads forward only, so the shard is opened again and read up to
 * the target. Hard links are rare in shards; each costs that extra pass.
 * (WeNet's stream mode, "r|*", cannot read a link at all: reshard writes it as
 * the regular member it stands for, which both modes read.) */
#ifndef ES_TAR_LINK_H
#define ES_TAR_LINK_H

#include <archive.h>
#include <stdint.h>

#include "core/context.h"
#include "readers/shard_file.h"

typedef struct es_tar_link {
    struct archive *a; /* positioned at the target's data; NULL when closed */
    es_shard_file file;
    uint64_t size;     /* the target's size: the link's data */
} es_tar_link;

/* The link `member`, header number `index` (0-based, every header counted) of
 * the shard at path, pointing at `target`: opens l at its data. ES_OK, or
 * ES_ERR_FORMAT naming the shard, the member and the problem. */
int es_tar_link_open(es_context *ctx, es_tar_link *l, const char *path, const char *member,
                     const char *target, uint64_t index);
void es_tar_link_close(es_tar_link *l);

#endif
