// The hold loop's baseline: BMv2 holding each benchmark frame for the time
// written in it, by the same recirculation loop as linkemu and nothing else
// (bench/hold_loop.p4). Its release error with N frames held is the floor
// any recirculating hold has on this BMv2 build and machine.
#include "hold_loop.p4"
