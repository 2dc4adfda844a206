/*
 * command_wire: commands as the monitor socket carries them
 * (proto/stage_control.proto): the one place where a command
 * (core/command.h) becomes protobuf and back. The server turns each
 * ControlRequest (a command by name, its stage and arguments) into a
 * command of its monitor and the answer into a ControlResponse; the remote
 * monitor does the opposite.
 */
#ifndef LC_MONITOR_COMMAND_WIRE_H
#define LC_MONITOR_COMMAND_WIRE_H

#include "core/command.h"
#include "monitor/monitor.h"

#include "stage_control.pb-c.h"

/* Run the request on m: the answer, malloc'd (free with
 * lcmon__control_response__free_unpacked). *name gets the command it was
 * (NULL: none), for the server's "a reload sends the hello again". */
Lcmon__ControlResponse *lc_command_wire_serve(lc_monitor *m, const Lcmon__ControlRequest *req,
                                              const char **name);

/* req in the command form, pointing into req (out->args is malloc'd: free
 * it, nothing else). */
void lc_command_wire_request(const lc_command_request *req, Lcmon__ControlRequest *out);
/* The answer a ControlResponse carries, into a zeroed res; returns res->rc. */
int lc_command_wire_result(const Lcmon__ControlResponse *resp, lc_command_result *res);

#endif
