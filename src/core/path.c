#include "core/path.h"

#include <stdio.h>

const char *es_resolve_path(const char *root, const char *path, char *buf, size_t len)
{
    if (!root || !*root || path[0] == '/')
        return path;
    snprintf(buf, len, "%s/%s", root, path);
    return buf;
}

const char *es_root_hint(const char *root, char *buf, size_t len)
{
    if (!root || !*root)
        return ES_ROOT_HINT;
    snprintf(buf, len, "relative paths resolve against --root %s, not the current directory",
             root);
    return buf;
}
