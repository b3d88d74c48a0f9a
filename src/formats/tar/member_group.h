/* How WeNet's `tar_file_and_group` turns tar members into utterances: a member
 * name splits at its LAST dot into key prefix and suffix; consecutive members
 * with the same prefix form one utterance; the suffix says what a member is. */
#ifndef ES_MEMBER_GROUP_H
#define ES_MEMBER_GROUP_H

#include <stddef.h>

typedef enum es_member_kind {
    ES_MEMBER_AUDIO, /* wav flac mp3 m4a ogg opus wma (WeNet's AUDIO_FORMAT_SETS) */
    ES_MEMBER_TEXT,  /* txt */
    ES_MEMBER_SPK,   /* spk: speaker id, as some shard writers add */
    ES_MEMBER_OTHER, /* any other suffix: kept by the loader as an attribute */
} es_member_kind;

/* Splits name at its last '.': *prefix_len is the key length, *suffix points
 * after the dot ("" when there is no dot: the whole name is the key). */
void es_member_split(const char *name, size_t *prefix_len, const char **suffix);

es_member_kind es_member_kind_of(const char *suffix);

/* Text of a text member as the loaders see it: UTF-8 decoded and strip()ped;
 * returns its length in code points. */
size_t es_text_length(const char *text, size_t n);

#endif
