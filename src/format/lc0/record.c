/*
 * record: see record.h. The layout checks are compile-time; this file holds
 * the version table. Pure functions, callable from any thread.
 */
#include "format/lc0/record.h"

size_t lc_record_size_for_version(uint32_t version)
{
    switch (version) {
    case 3:
        return LC_V3_RECORD_SIZE;
    case 4:
        return LC_V4_RECORD_SIZE;
    case 5:
        return LC_V5_RECORD_SIZE;
    case 6:
        return LC_V6_RECORD_SIZE;
    case 7:
        return LC_V7_RECORD_SIZE;
    default:
        return 0;
    }
}
