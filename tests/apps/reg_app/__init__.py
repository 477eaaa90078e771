"""A package whose registered task lives in a submodule (BATCHQ_TASK_MODULES=reg_app.*)."""
