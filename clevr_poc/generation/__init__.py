"""Benchmark generation: environments, scenes, layouts and questions (paper §3).

Modules, in the order data flows through them:

- scene graphs: :mod:`~clevr_poc.generation.object_types` (the 768 object types),
  :mod:`~clevr_poc.generation.scene_check` (vectorised constraint checks),
  :mod:`~clevr_poc.generation.stratified_proposal` and :mod:`~clevr_poc.generation.gibbs_kernel` (the two
  sampling methods), :mod:`~clevr_poc.generation.scene_programs` (clingo), :mod:`~clevr_poc.generation.scene_sampler`
  (:class:`SceneSampler`), :mod:`~clevr_poc.generation.partial_scenes`;
- 3D layout and visibility: :mod:`~clevr_poc.generation.layout`;
- questions: :mod:`~clevr_poc.generation.template_files`, :mod:`~clevr_poc.generation.candidate_objects`,
  :mod:`~clevr_poc.generation.answer_balancer`, :mod:`~clevr_poc.generation.question_instance`,
  :mod:`~clevr_poc.generation.question_generator`;
- datasets: :mod:`~clevr_poc.generation.dataset_config`, :mod:`~clevr_poc.generation.example_plan`,
  :mod:`~clevr_poc.generation.example_generation` (one example, in a worker),
  :mod:`~clevr_poc.generation.dataset_writer` (:func:`generate_dataset`), :mod:`~clevr_poc.generation.stats`.
"""
