"""Writing to the switch: the program, the port layout and a profile at
install, and a profile live (push_profile), all or nothing."""

import secrets

from ..model.profile import ProfileError
from ..program import constants as p4
from .codes import DIRECTION_IDS
from .entries.cobalt import cobalt_entries, flow_queue_entries
from .entries.delay_variation import delay_spike_entries, jitter_entries
from .entries.hold_limit import hold_limit_entries
from .entries.link_arrival import link_entries
from .entries.link_errors import arq_entries, link_state_entries
from .entries.link_params import link_params_entries
from .entries.loss_model import loss_model_entries
from .entries.packet_faults import packet_fault_entries
from .entries.port_map import multicast_groups, port_map_entries
from .entries.queue_params import queue_params_entries
from .entries.red import red_entries
from .entries.release import release_entries
from .entries.sojourn_ramp import sojourn_ramp_entries
from .entries.traffic_class import traffic_class_entries
from .errors import P4RuntimeError


def install(switch, p4info_path, bmv2_json_path, layout, profile):
    """Loads the program, then the port layout, then the profile."""
    switch.set_pipeline(p4info_path, bmv2_json_path)
    switch.write_multicast_groups(multicast_groups(layout))
    tables = {}
    for entry in port_map_entries(layout) + link_state_entries({d: 0.0 for d in DIRECTION_IDS}):
        tables.setdefault(entry.table, []).append(entry)
    switch.sync_tables(tables)
    push_profile(switch, profile)


def profile_entries(profile, generation=0):
    """{table: entries} of every table a profile sets, in the order they are
    written (queues before the link: a link entry never meets a class
    without one); `generation` tells the AQM state of this push from an
    earlier one's.

    A profile without link states makes the link error-free, and one with a
    single state gives the link that state's errors for good; with more, the
    error probabilities are left to the StateDriver walking its timeline."""
    tables = {p4.TABLE_QUEUE_PARAMS: queue_params_entries(profile),
              p4.TABLE_TRAFFIC_CLASS: traffic_class_entries(profile),
              p4.TABLE_LINK_PARAMS: link_params_entries(profile),
              p4.TABLE_RELEASE: release_entries(profile),
              p4.TABLE_ARQ: arq_entries(profile),
              p4.TABLE_LINK: link_entries(profile),
              p4.TABLE_LOSS_MODEL: loss_model_entries(profile),
              p4.TABLE_JITTER: jitter_entries(profile),
              p4.TABLE_DELAY_SPIKES: delay_spike_entries(profile),
              p4.TABLE_PACKET_FAULTS: packet_fault_entries(profile),
              **red_entries(profile, generation),
              **cobalt_entries(profile, generation),
              **flow_queue_entries(profile),
              **sojourn_ramp_entries(profile)}
    if profile.states is None:
        tables[p4.TABLE_LINK_STATE] = link_state_entries({d: 0.0 for d in DIRECTION_IDS})
    elif len(profile.states.states) == 1:
        (state,) = profile.states.states.values()
        tables[p4.TABLE_LINK_STATE] = link_state_entries(state.error)
    return tables


def entry_problems(profile, p4info):
    """Why push_profile cannot write `profile`: its entries are built and,
    with the program's P4Info, encoded against its field widths and counted
    against its table sizes. [] when it can."""
    try:
        tables = profile_entries(profile)
    except (ValueError, ArithmeticError) as err:   # beyond the data plane, or any number
        return [f"its table entries cannot be computed: {err}"]
    if p4info is None:
        return []
    problems = []
    for table, entries in tables.items():
        size = p4info.table(table).size
        if len(entries) > size:
            problems.append(f"{p4info.table(table).preamble.alias}: {len(entries)} entries; "
                            f"the table holds {size}")
        for entry in entries:
            try:
                p4info.table_entry(entry)
            except P4RuntimeError as err:
                problems.append(str(err))
                break   # one a table: the others are likely alike
    return problems


def push_profile(switch, profile):
    """Changes the link live, all or nothing (a profile the program cannot
    hold is refused before anything is written); packets already held keep
    their release times. RED and COBALT start afresh, as a new qdisc would:
    each push is a generation of its own."""
    problems = entry_problems(profile, switch.p4info)
    if problems:
        raise ProfileError(profile.name, problems)
    switch.sync_tables(profile_entries(profile, generation=secrets.randbits(32)))


def set_hold(switch, capacity, timed):
    """How many packets the hold takes (testbed.bmv2.hold_capacity), and
    whether the switch has timed departure."""
    switch.sync_table(p4.TABLE_HOLD_LIMIT, hold_limit_entries(capacity, timed))
