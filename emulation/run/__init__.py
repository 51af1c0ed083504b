"""One run of a scenario, and many.

    runner                     `mrclab run`: fabric, workers, captures, teardown
    run_faults                 the fault schedule, applied through the controller
    run_progress, run_output   following a run; its tables and CSVs
    run_summary, run_record    summary.json and its verdict; run.json
    cpu_meter                  the machine's CPU during a run
    live_state, top, metrics_server   a running experiment seen live
    sweep                      `mrclab sweep`: every point of a sweep plan
"""
