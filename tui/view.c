/*
 * view: see view.h.
 */
#include "tui/view.h"

#include "monitor/snapshot.h"

const Lcmon__StageMetricProto *tui_view_rate_stage(const tui_view *v,
                                                   const Lcmon__StageMetricProto *l,
                                                   const Lcmon__DataLoaderMetricsProto **m)
{
    const Lcmon__StageMetricProto *r =
        v->rate && v->rate != v->last && l->name ? lc_snapshot_find_stage(v->rate, l->name) : NULL;
    if (m)
        *m = r ? v->rate : v->last;
    return r ? r : l;
}
