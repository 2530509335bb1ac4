// The sleep lanes keeping link order (bench/lanes.p4): BMv2 holding frames
// asleep and releasing them in the order they came, and nothing else.
#define LINK_ORDER
#include "lanes.p4"
