#include "formats/tar/member_group.h"

#include <string.h>

#include "core/utf8.h"

void es_member_split(const char *name, size_t *prefix_len, const char **suffix)
{
    const char *dot = strrchr(name, '.');
    if (!dot) {
        *prefix_len = strlen(name);
        *suffix = name + *prefix_len;
        return;
    }
    *prefix_len = (size_t)(dot - name);
    *suffix = dot + 1;
}

es_member_kind es_member_kind_of(const char *suffix)
{
    static const char *const audio[] = {"flac", "mp3", "m4a", "ogg", "opus", "wav", "wma"};
    for (size_t i = 0; i < sizeof audio / sizeof audio[0]; i++)
        if (strcmp(suffix, audio[i]) == 0)
            return ES_MEMBER_AUDIO;
    if (strcmp(suffix, "txt") == 0)
        return ES_MEMBER_TEXT;
    if (strcmp(suffix, "spk") == 0)
        return ES_MEMBER_SPK;
    return ES_MEMBER_OTHER;
}

size_t es_text_length(const char *text, size_t n)
{
    n = es_strip(&text, n);
    return es_utf8_length(text, n);
}
