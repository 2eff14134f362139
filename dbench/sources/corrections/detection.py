"""RoiAlign-10."""

from __future__ import annotations

from onnx.reference.ops.op_roi_align import RoiAlign

from dbench.sources.corrections.base import VersionedOpRun, text


class RoiAlignOutputHalfPixel(VersionedOpRun, RoiAlign):
    """RoiAlign-10: the region's coordinates are used as they are (output_half_pixel, the only rule of
    version 10; version 16 added half_pixel and made it the default). onnx.reference gives version 10
    the newest default, which shifts every region by half a pixel."""

    def _run(
        self, x, rois, batch_indices, mode="avg", output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0
    ):  # noqa: ANN001, ANN202
        return RoiAlign._run(
            self,
            x,
            rois,
            batch_indices,
            coordinate_transformation_mode="output_half_pixel",
            mode=text(mode),
            output_height=output_height,
            output_width=output_width,
            sampling_ratio=sampling_ratio,
            spatial_scale=spatial_scale,
        )
