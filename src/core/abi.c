/* The version functions and the ABI layout table (es_abi_layout): every public
 * struct's size and its fields' offsets and sizes, as this library was compiled,
 * so a binding that mirrors the structs (python/equishard/_ffi.py) can check
 * its copy field by field (tests/python/test_abi.py).
 *
 * The rows (STRUCT(name), then one FIELD(name, field) per field in declaration
 * order) are generated at build time from the public headers' struct bodies by
 * tools/gen_abi_layout.py (src/core/meson.build), so a field added to a header
 * is listed without editing this file. test_abi.py checks that the table
 * covers every struct's bytes and that _ffi.py follows it. */
#include <stddef.h>

#include "config.h"
#include "equishard/equishard_experimental.h" /* its structs too, were it to declare any */

/* meson.build checks that the header's ES_VERSION_* macros spell ES_VERSION. */
ES_API unsigned es_version_number(void) { return ES_VERSION_NUMBER; }

ES_API const char *es_version(void) { return ES_VERSION; }

#define STRUCT(T) {#T, NULL, 0, sizeof(T)}
#define FIELD(T, f) {#T, #f, offsetof(T, f), sizeof(((T *)0)->f)}

static const es_abi_field layout[] = {
#include "core/abi_layout.h"
};

ES_API const es_abi_field *es_abi_layout(size_t *count)
{
    if (count)
        *count = sizeof layout / sizeof layout[0];
    return layout;
}
