"""The time scale applied to a run, and finding the one this machine needs.

    time_scale      a scenario's settings moved into the wall-clock world (model/timescale.py
                    holds the arithmetic)
    calibrate       the smallest time scale at which the fidelity monitor says "ok"
    calibrate_cli   `mrclab calibrate`
"""
