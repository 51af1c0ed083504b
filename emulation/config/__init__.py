"""Scenario and sweep files as data, validated before anything starts.

    scenario_schema   every key: type, range, default, meaning
    scenario          loading and checking a scenario (fabric, transports, collective, mrc)
    scenario_faults   its [[faults]] schedule: each entry, `links` expanded, times and clears
    scenario_short    a scenario's [short] version
    sweep_plan        a sweep file expanded into one scenario per point
"""
