# models: the ResNet and BERT built from nn layers, and the registry that
# names them (model.h: ftm_model_create, ftm_model_find)
libftmesh_la_SOURCES += models/registry.c models/models.h models/resnet.c \
	models/bert.c
